"""Stored arguments are always JSON: past the cap, strings are cut inside, and the cut is recorded."""

from __future__ import annotations

import json
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from devtools.sample_call import SAMPLE_SESSION
from harness.events import ToolCallCompleted
from harness.gateway.evidence.args_cap import ARGS_CAP_BYTES, CUT, OVERSIZED_KEY
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.evidence.redaction import REDACTED, args_as_stored, canonical_json

PATTERN_SECRET = "ghp_" + "A1b2C3d4E5" * 4
KNOWN_SECRET = "daemon-held-value-7f3e9a"
SECRETS = (PATTERN_SECRET, KNOWN_SECRET)

long_text = st.tuples(st.text(max_size=12), st.integers(0, 700)).map(lambda t: t[0] * t[1])
"""Strings up to several KiB (a write_file's content), cheap to draw."""
texts = st.one_of(st.text(max_size=30), long_text, st.sampled_from(SECRETS).map(lambda s: f"use {s} now"))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(st.one_of(st.text(max_size=12), st.just("api_key")), inner, max_size=6),
    ),
    max_leaves=40,
)
arguments = st.dictionaries(st.one_of(st.text(max_size=12), st.just("password")), values, max_size=8)


class Known:
    """The daemon's own secret values, as ``KnownSecrets`` finds them."""

    def found_in(self, text: str) -> bool:
        return KNOWN_SECRET in text

    def redact(self, text: str, marker: str) -> str:
        return text.replace(KNOWN_SECRET, marker)


@settings(max_examples=150, deadline=None)
@given(arguments)
def test_any_arguments_an_agent_sends_are_stored_as_json_within_the_cap_and_still_redacted(
    args: dict[str, Any],
):
    text, truncated = args_as_stored(args, known=Known())
    stored = json.loads(text)  # parses, whatever was sent
    assert len(text.encode()) <= ARGS_CAP_BYTES
    assert PATTERN_SECRET not in text and KNOWN_SECRET not in text
    if truncated:
        assert isinstance(stored, dict) and (OVERSIZED_KEY in stored or CUT in text)
    else:  # nothing cut: the redacted canonical JSON, whole
        assert text == canonical_json(stored) and len(text.encode()) <= ARGS_CAP_BYTES


def test_a_long_value_is_cut_inside_its_string_and_the_short_ones_stay_whole():
    text, truncated = args_as_stored({"content": "x = 1\n" * 2000, "path": "src/a.py", "mode": 420})
    stored = json.loads(text)
    assert truncated and stored["path"] == "src/a.py" and stored["mode"] == 420
    assert stored["content"].startswith("x = 1\n") and stored["content"].endswith(CUT)
    assert ARGS_CAP_BYTES - 64 < len(text.encode()) <= ARGS_CAP_BYTES  # as much kept as fits


def test_arguments_whose_structure_alone_is_over_the_cap_are_stored_as_one_marked_string():
    text, truncated = args_as_stored({"numbers": list(range(5000))})
    assert truncated and json.loads(text)[OVERSIZED_KEY].startswith('{"numbers":[0,1,2,')


def test_a_recorded_call_says_its_arguments_were_cut_and_their_size():
    events: list[ToolCallCompleted] = []
    recorder = CallRecorder(events.append, "redacted")  # type: ignore[arg-type]
    for arguments in ({"text": "short"}, {"content": "é" * 5000, "token": "hunter2"}):
        recorder.record(
            session=SAMPLE_SESSION,
            upstream="up",
            tool="write",
            tier="write",
            arguments=arguments,
            outcome="ok",
            reason=None,
            started=time.perf_counter(),
            response_bytes=10,
            span_id="0123456789abcdef",
            exposed="up__write",
        )
    short, long = events
    assert (short.args_truncated, short.args_bytes) == (False, len(b'{"text":"short"}'))
    assert long.args_truncated and long.args_bytes == len(canonical_json(arguments).encode())
    assert json.loads(long.args or "")["token"] == REDACTED
    assert ToolCallCompleted.model_validate(long.model_dump()) == long  # the trusted event is a valid one
