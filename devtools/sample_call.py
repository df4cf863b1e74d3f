"""One plausible recorded call, for benchmarks and tests of the recording path (the real
``CallRecorder.record`` a finished call goes through)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from harness.events import Attribution
from harness.gateway.evidence.recording import CallRecorder
from harness.rules.routing import Identity

SAMPLE_SESSION = SimpleNamespace(
    session_id="bench-session-0001",
    identity=Identity(
        attribution=Attribution("bench", "r", "generic", "m", "c"),
        trace_id="t" * 32,
        policy="",
        allow=frozenset({"read"}),
    ),
)
"""What the recorder reads of a downstream session: its id and identity."""


def record_sample_call(recorder: CallRecorder) -> None:
    """Record one successful ``up__echo`` call that has just finished."""
    recorder.record(
        session=SAMPLE_SESSION,
        upstream="up",
        tool="echo",
        tier="read",
        arguments={"text": "hello world"},
        outcome="ok",
        reason=None,
        started=time.perf_counter(),
        response_bytes=120,
        span_id="0123456789abcdef",
        exposed="up__echo",
        request_id=1,
    )
