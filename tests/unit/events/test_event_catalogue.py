"""The event catalogue: stored names, versions and the codec (the import boundary: test_import_layers.py)."""

from __future__ import annotations

import re

import pytest

from harness.events import ToolCallCompleted, decode, encode, event_class, registered
from harness.events.base import Event, stored

STORED_NAME = re.compile(r"[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*")
"""``subject.fact`` in snake case: ``tool_call.completed``, ``upstream.state_changed``."""

SAMPLE_CALL = ToolCallCompleted(
    ts=1_796_000_000.25,
    session_id="s1",
    latency_ms=1.5,
    harness="h",
    run_id="r",
    adapter="generic",
    model="m",
    config_hash="c",
    upstream="demo",
    tool="echo",
    tier="read",
    args_hash="a" * 64,
    args='{"text":"hi"}',
    outcome="ok",
    error_reason=None,
    response_bytes=100,
    response_tokens_est=25,
    trace_id="t" * 32,
    span_id="s" * 16,
    exposed_name="demo__echo",
    via_call_tool=False,
    request_id="1",
)


def test_every_stored_name_is_a_dotted_subject_and_fact_and_every_version_is_positive():
    for name, cls in registered().items():
        assert STORED_NAME.fullmatch(name), f"{cls.__name__}: {name!r} is not `subject.fact`"
        assert cls.VERSION >= 1


def test_an_event_class_without_a_stored_name_cannot_be_registered():
    class Nameless(Event):
        pass

    with pytest.raises(TypeError, match="no STORED_NAME"):
        stored(Nameless)
    assert Nameless not in registered().values()


def test_an_event_survives_encode_and_decode_unchanged():
    text = encode(SAMPLE_CALL)
    assert decode("tool_call.completed", ToolCallCompleted.VERSION, text) == SAMPLE_CALL
    assert encode(decode("tool_call.completed", ToolCallCompleted.VERSION, text)) == text


def test_events_are_frozen_and_refuse_unknown_fields():
    with pytest.raises(ValueError, match="frozen"):
        SAMPLE_CALL.tool = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="extra"):
        ToolCallCompleted.model_validate({**SAMPLE_CALL.model_dump(), "surprise": 1})


def test_a_stored_name_cannot_be_taken_twice():
    class Impostor(Event):
        STORED_NAME = "tool_call.completed"

    with pytest.raises(TypeError, match="already taken"):
        stored(Impostor)
    assert event_class("tool_call.completed") is ToolCallCompleted


def test_decoding_a_version_newer_than_the_code_is_an_error():
    with pytest.raises(ValueError, match="newer than this code"):
        decode("tool_call.completed", 99, encode(SAMPLE_CALL))
