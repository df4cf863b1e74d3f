"""A denied call's tool name is the agent's own text, which no catalogue vouches for: it is stored
without a held secret, a secret-looking value, control or bidi characters, and cut to a bounded
length, whatever ``call_log_args`` says."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass

import pytest

from devtools.sample_call import SAMPLE_SESSION
from harness.events import ToolCallCompleted
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.evidence.recording import CallRecorder
from harness.vocabulary import ArgsMode

HELD = "held-Zq81-secret-Vb27x"


@dataclass(frozen=True)
class _Settings:
    args_mode: ArgsMode
    known: KnownSecrets


@dataclass(frozen=True)
class _Held:
    current: _Settings


def _recorded(tool: str, outcome: str, mode: str = "redacted") -> ToolCallCompleted:
    events: list[ToolCallCompleted] = []
    settings = _Held(_Settings(mode, KnownSecrets([HELD])))  # type: ignore[arg-type]
    recorder = CallRecorder(events.append, settings=settings)
    recorder.record(
        session=SAMPLE_SESSION,
        upstream="harness",
        tool=tool,
        tier="write",
        arguments={},
        outcome=outcome,  # type: ignore[arg-type]
        reason="unknown_tool" if outcome == "denied" else None,
        started=time.perf_counter(),
        response_bytes=10,
        span_id="0123456789abcdef",
        exposed=tool,
    )
    return events[0]


@pytest.mark.parametrize("mode", ["redacted", "hash", "none"])
@pytest.mark.parametrize(
    "name",
    [
        f"up__{HELD}",
        f"up__{base64.b64encode(HELD.encode()).decode()}",
        "up__ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
    ],
)
def test_a_denied_calls_tool_name_never_stores_a_secret(name: str, mode: str) -> None:
    event = _recorded(name, "denied", mode)
    for stored in (event.tool, event.exposed_name):
        assert HELD not in stored and "Q1w2E3r4T5y6" not in stored
        assert base64.b64encode(HELD.encode()).decode() not in stored
        assert "[REDACTED]" in stored


def test_a_denied_calls_tool_name_is_stored_printable_and_bounded() -> None:
    event = _recorded("up__esc\x1b]0;PWNED\x07\x1b[31mred\u202eelif" + "x" * 10_000, "denied")
    assert event.tool.startswith("up__esc]0;PWNED[31mredelif") and len(event.tool) <= 200
    assert event.exposed_name == event.tool


def test_a_served_calls_tool_name_is_stored_as_the_catalogue_has_it() -> None:
    assert _recorded("get_file_contents", "ok").tool == "get_file_contents"
