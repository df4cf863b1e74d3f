"""``Mcp-Param-*`` headers checked against a ``tools/call``'s arguments (SEP-2243), as pure functions
(tests/acceptance/test_http_param_headers.py sends them to a real daemon)."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from harness.gateway.downstream.modern_era import header_mismatch
from harness.gateway.downstream.param_headers import call_mismatch, declared, decode, mismatch
from harness.rules.exposure import EMPTY_VIEW, Route

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "query": {"type": "string"},
    },
}


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


@pytest.mark.parametrize(
    ("headers", "arguments"),
    [
        ({"mcp-param-region": "eu-west-1"}, {"region": "eu-west-1", "query": "x"}),
        ({"mcp-param-region": b64("Zürich ")}, {"region": "Zürich "}),
        ({"mcp-param-priority": "42"}, {"priority": 42}),
        ({"mcp-param-priority": "42.0"}, {"priority": 42}),
        ({"mcp-param-verbose": "false"}, {"verbose": False}),
        ({"mcp-param-zone": "b"}, {"where": {"zone": "b"}}),
        ({}, {"region": None, "query": "only the unmarked"}),
        ({"mcp-param-query": "not declared, not checked"}, {}),
        ({"mcp-param-region": "SGVsbG8="}, {"region": "SGVsbG8="}),  # no sentinel: a literal
    ],
)
def test_headers_that_repeat_the_marked_arguments_agree(headers, arguments):
    assert mismatch(headers, SCHEMA, arguments) is None


@pytest.mark.parametrize(
    ("headers", "arguments", "words"),
    [
        ({}, {"region": "eu"}, "Mcp-Param-Region header is missing"),
        ({"mcp-param-region": "eu"}, {}, "arguments.region is absent"),
        ({"mcp-param-region": "us"}, {"region": "eu"}, "does not match arguments.region"),
        ({"mcp-param-region": "=?base64?SGVsbG8?="}, {"region": "Hello"}, "not valid"),
        ({"mcp-param-region": "=?base64?SGVs!!!bG8=?="}, {"region": "Hello"}, "not valid"),
        ({"mcp-param-priority": "42.5"}, {"priority": 42}, "does not match"),
        ({"mcp-param-verbose": "True"}, {"verbose": True}, "does not match"),
        ({"mcp-param-zone": "a"}, {"where": {"zone": "b"}}, "arguments.where.zone"),
        ({"mcp-param-region": "[]"}, {"region": []}, "does not match"),
    ],
)
def test_a_missing_extra_malformed_or_different_header_is_a_mismatch(headers, arguments, words):
    why = mismatch(headers, SCHEMA, arguments)
    assert why is not None and words in why


@pytest.mark.parametrize(
    "mark",
    [
        {"type": "number", "x-mcp-header": "Score"},
        {"type": "string", "x-mcp-header": "Two Words"},
        {"type": "string", "x-mcp-header": ""},
        {"type": ["string", "null"], "x-mcp-header": "Either"},
        {"type": "string", "x-mcp-header": "region"},  # the same name in another case
        {"anyOf": [{"type": "string", "x-mcp-header": "Under"}]},  # off the properties chain
        {"type": "array", "items": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        {"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "Def"}}},
    ],
)
def test_a_schema_with_an_invalid_mark_declares_no_header(mark):
    schema = {"type": "object", "properties": {**SCHEMA["properties"], "bad": mark}}
    assert declared(schema) == []
    assert mismatch({}, schema, {"region": "eu"}) is None


def test_a_sentinel_decodes_only_from_canonical_base64_of_utf8():
    assert decode(b64("héllo")) == "héllo"
    assert decode("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="  # no ?= suffix: a literal
    assert decode("=?base64?SGVsbG9=?=") is None  # non-zero trailing bits
    assert decode("=?base64?/w==?=") is None  # not UTF-8
    assert decode(None) is None


def test_the_mcp_name_header_accepts_only_a_canonical_sentinel():
    message: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": "ab", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    assert header_mismatch({**headers, "mcp-name": "=?base64?YWI=?="}, message) is None
    assert header_mismatch({**headers, "mcp-name": "=?base64?YWJ=?="}, message) is not None  # "ab" too


def test_a_call_is_checked_against_the_schema_its_session_lists_for_the_tool():
    route = Route("up__lookup", "up", "lookup", "read")
    tool = {"name": "up__lookup", "inputSchema": SCHEMA}
    view = dataclasses.replace(
        EMPTY_VIEW,
        routes={"up__lookup": route},
        aliases={"up__lookup_old": "up__lookup"},
        tools={"up__lookup": tool},
    )

    def call(name: str) -> dict[str, Any]:
        return {"method": "tools/call", "params": {"name": name, "arguments": {"region": "eu"}}}

    assert call_mismatch({}, call("up__lookup"), view) is not None
    assert call_mismatch({}, call("up__lookup_old"), view) is not None  # an alias names the tool too
    assert call_mismatch({"mcp-param-region": "eu"}, call("up__lookup"), view) is None
    assert call_mismatch({}, call("unknown"), view) is None  # refused later as an unknown tool
    assert call_mismatch({}, {"method": "tools/list", "params": {}}, view) is None
