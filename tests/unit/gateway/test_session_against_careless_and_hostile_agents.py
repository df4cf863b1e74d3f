"""Findings of the new-user and attacker trial on the MCP session path, each reproduced first
(``../shared/reports/2026-12-01-new-user-trial.md``): a session fed what a careless or hostile agent
sends, with no upstream needed."""

from __future__ import annotations

import json

import pytest

from harness.events import ToolCallCompleted, ToolSearchCompleted
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.evidence.redaction import redact_text, redacted_args
from harness.gateway.wire import jsonrpc
from harness.rules.exposure import EMPTY_VIEW, build_view
from harness.rules.gateway_tools import GATEWAY_TOOL_TIERS
from harness.rules.routing import UNATTRIBUTED
from support import FACADE_READ


def session_for(version: str | None = "2025-11-25", view=EMPTY_VIEW, mode="redacted", search=None):
    sent: list = []
    events: list = []
    kwargs = {"search": search} if search else {}
    session = DownstreamSession(
        identity=UNATTRIBUTED,
        view=view,
        links=lambda _name: None,
        recorder=CallRecorder(events.append, mode),
        emit=events.append,
        send=lambda data: sent.append(json.loads(data)),
        **kwargs,
    )
    if version:
        session.handle(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version}}
        )
        sent.clear()
        events.clear()
    return session, sent, events


def calls(events: list) -> list[ToolCallCompleted]:
    return [e for e in events if isinstance(e, ToolCallCompleted)]


# ---------------------------------------------------------------- M3: non-standard JSON


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_nan_in_a_request_is_refused_at_the_edge_with_its_id_and_recorded(constant):
    session, sent, events = session_for()
    head = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x__y","arguments":{"a":'
    line = (head + constant + "}}}").encode()
    with pytest.raises(jsonrpc.NotJSON):
        jsonrpc.parse(line)
    session.refuse_unparsable(line, jsonrpc.NotJSON(f"{constant} is not a JSON number").reason)
    error = sent[0]["error"]
    assert sent[0]["id"] == 7 and error["code"] == jsonrpc.INVALID_PARAMS
    assert error["data"] == {"reason": "invalid_request"} and constant in error["message"]
    (row,) = calls(events)
    assert (row.outcome, row.error_reason, row.upstream) == ("denied", "invalid_request", "harness")


def test_bad_utf8_and_garbage_are_parse_errors_without_an_id():
    for line in (b'{"id":1,"method":"ping"\xff}', b"{not json", b'{"a":1e99999}x'):
        with pytest.raises(jsonrpc.NotJSON):
            jsonrpc.parse(line)
    session, sent, _ = session_for()
    session.refuse_unparsable(b"{not json", "not JSON")
    assert sent[0]["id"] is None and sent[0]["error"]["code"] == jsonrpc.PARSE_ERROR


def test_what_goes_upstream_is_ascii_so_no_agent_text_can_make_a_line_an_upstream_drops():
    line = jsonrpc.encode_ascii({"text": "caf\u00e9 \ud800 \U0001f600"})
    assert line.isascii() and json.loads(line)["text"] == "caf\u00e9 \ud800 \U0001f600"


# ---------------------------------------------------------------- M4 / M5: redaction


def test_a_search_query_is_redacted_in_its_event_and_its_row():
    def search(query, k, allowed, done):
        done([], None)

    session, sent, events = session_for(view=_lazy_view(), search=search)
    secret = "use password=hunter2-QUERY-SECRET and token ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    session.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_tools", "arguments": {"query": secret}},
        }
    )
    assert "result" in sent[0]
    stored = json.dumps([e.model_dump() for e in events])
    assert "hunter2-QUERY-SECRET" not in stored and "ghp_Q1w2" not in stored
    (search_event,) = [e for e in events if isinstance(e, ToolSearchCompleted)]
    assert search_event.query is not None and "[REDACTED]" in search_event.query


@pytest.mark.parametrize("mode", ["hash", "none"])
def test_a_search_query_is_not_stored_at_all_under_hash_or_none(mode):
    def search(query, k, allowed, done):
        done([], None)

    session, _sent, events = session_for(view=_lazy_view(), mode=mode, search=search)
    session.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_tools", "arguments": {"query": "hunter2-NONEMODE-SECRET"}},
        }
    )
    assert "hunter2-NONEMODE-SECRET" not in json.dumps([e.model_dump() for e in events])
    (row,) = calls(events)
    assert row.args is None and (row.args_hash is None) == (mode == "none")


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=RV-1",
        "GITHUB_TOKEN=RV-6 other",
        "export DB_PASSWORD=RV-3 && run",
        "AWS_SECRET_ACCESS_KEY=RV-8",
        "STRIPE_KEY=RV-10",
        "client_secret: RV-11",
        '{"password": "RV-4"}',
        "mysql -pRV-5 -u root db",
        "my password is RV-7",
    ],
)
def test_prefixed_env_style_names_and_the_other_misses_are_redacted(text):
    assert "RV-" not in redact_text(text)
    assert "RV-" not in redacted_args({"command": text})


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("curl -u admin:RV-20 https://api.example/x", "curl -u [REDACTED] https://api.example/x"),
        ("curl -s --user admin:RV-21 https://h/x", "curl -s --user [REDACTED] https://h/x"),
        ("curl --user=admin:RV-22 https://h/x", "curl --user=[REDACTED] https://h/x"),
        ("Cookie: sid=RV-23", "Cookie: [REDACTED]"),
        ("Set-Cookie: sid=RV-24; Path=/; HttpOnly", "Set-Cookie: [REDACTED]"),
        ("sshpass -p RV-25 ssh bob@host", "sshpass -p [REDACTED] ssh bob@host"),
        ("sshpass -p 'RV-26 with space' ssh h", "sshpass -p [REDACTED] ssh h"),
        ("passphrase: correct RV-27 battery\nnext line", "[REDACTED]\nnext line"),
    ],
)
def test_curl_user_cookie_headers_sshpass_and_multi_word_passphrases_are_redacted(text, kept):
    assert redact_text(text) == kept
    assert "RV-" not in redacted_args({"command": text})


@pytest.mark.parametrize("text", ["cookie: chocolate chip", "curl https://h/x -o out", "sshpass -V"])
def test_text_near_the_curl_cookie_and_sshpass_forms_is_kept(text):
    assert redact_text(text) == text


@pytest.mark.parametrize("key", ["pwd", "session", "DB_PASSWORD", "api_key", "X-Api-Key", "stripe_key"])
def test_values_under_secret_keys_are_redacted(key):
    assert "RV-" not in redacted_args({key: "RV-12", "nested": {key: ["RV-13"]}})


@pytest.mark.parametrize("text", ["mkdir -p build && ls", "find . -print", "keyboard=us", "monkey business"])
def test_ordinary_text_that_looks_close_is_kept(text):
    assert redact_text(text) == text


# ---------------------------------------------------------------- m2: malformed calls


@pytest.mark.parametrize(
    "params",
    [
        {"name": "x__y", "arguments": "not an object"},
        {"arguments": {}},
        {"name": 5},
        "params as a string",
    ],
)
def test_a_malformed_call_gets_data_reason_and_a_row(params):
    session, sent, events = session_for()
    session.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
    error = sent[0]["error"]
    assert error["code"] == jsonrpc.INVALID_PARAMS and error["data"] == {"reason": "invalid_request"}
    (row,) = calls(events)
    assert (row.outcome, row.error_reason, row.upstream) == ("denied", "invalid_request", "harness")


def test_call_tool_with_bad_arguments_gets_data_reason_and_a_row():
    session, sent, events = session_for(view=_lazy_view())
    session.handle(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "call_tool", "arguments": {"name": 1}},
        }
    )
    assert sent[0]["error"]["data"] == {"reason": "invalid_request"}
    assert [(r.tool, r.outcome) for r in calls(events)] == [("call_tool", "denied")]


# ---------------------------------------------------------------- m14: JSON-RPC edge cases


def test_requests_before_initialize_are_refused_except_ping():
    session, sent, _ = session_for(version=None)
    session.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    session.handle({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert sent[0]["error"]["code"] == jsonrpc.INVALID_REQUEST and "initialize" in sent[0]["error"]["message"]
    assert sent[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_a_second_initialize_is_refused():
    session, sent, _ = session_for()
    session.handle(
        {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}
    )
    assert sent[0]["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert session.protocol_version == "2025-11-25"


@pytest.mark.parametrize("message", [{"jsonrpc": "2.0", "id": 301, "method": 123}, {"id": 300}])
def test_a_request_without_a_valid_method_is_answered_with_its_id(message):
    session, sent, _ = session_for()
    session.handle(message)
    assert sent[0]["id"] == message["id"] and sent[0]["error"]["code"] == jsonrpc.INVALID_REQUEST


def test_a_batch_is_served_in_2025_03_26_and_refused_after():
    session, sent, _ = session_for(version="2025-03-26")
    session.handle(
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    )
    [answer] = sent
    assert [m["id"] for m in answer] == [1, 2] and all("result" in m for m in answer)
    session, sent, _ = session_for(version="2025-06-18")
    session.handle([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert sent[0]["error"]["code"] == jsonrpc.INVALID_REQUEST


def test_a_batch_is_answered_as_one_array_with_no_entry_for_its_notifications():
    session, sent, _ = session_for(version="2025-03-26")
    session.handle(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "no/such"},
            {"nonsense": True},
        ]
    )
    [answer] = sent
    assert sorted(str(m["id"]) for m in answer) == ["1", "2", "None"]
    session.handle({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # after the batch: one line again
    assert sent[1] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_a_batch_of_only_notifications_gets_no_answer():
    session, sent, _ = session_for(version="2025-03-26")
    session.handle([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    session.handle({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert sent == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


# ---------------------------------------------------------------- M7 / m16: unknown names


OWN_NAMES = {*GATEWAY_TOOL_TIERS, "search_tools", "call_tool"}


def _calls_labels() -> list[dict[str, str]]:
    from harness.gateway.evidence.metrics import REGISTRY

    return [
        sample.labels
        for metric in REGISTRY.collect()
        if metric.name == "harness_mcp_calls"
        for sample in metric.samples
        if sample.name == "harness_mcp_calls_total"
    ]


def test_an_unknown_name_is_recorded_under_harness_never_as_a_made_up_upstream():
    session, _sent, events = session_for()
    upstreams_before = {labels["upstream"] for labels in _calls_labels()}
    for i in range(250):
        session.handle(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": f"fake{i}__tool{i}", "arguments": {}},
            }
        )
    assert {r.upstream for r in calls(events)} == {"harness"}
    assert all(r.outcome == "denied" for r in calls(events))
    labels = _calls_labels()
    assert {x["upstream"] for x in labels} - upstreams_before <= {"harness"}  # no made-up upstream
    assert {x["tool"] for x in labels if x["upstream"] == "harness"} - OWN_NAMES <= {"__unknown__"}


def test_unknown_names_share_one_unknown_series_and_never_push_a_gateway_tool_into_other():
    session, _sent, _events = session_for()
    for i in range(150):
        params = {"name": f"junk{i}", "arguments": {}}
        session.handle({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
    params = {"name": "harness_describe", "arguments": {}}
    session.handle({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": params})
    tools = {x["tool"] for x in _calls_labels() if x["upstream"] == "harness"}
    assert "harness_describe" in tools and "__unknown__" in tools
    assert not any(tool.startswith("junk") for tool in tools) and "__other__" not in tools


def test_a_refusal_to_an_unattributed_session_names_the_token_as_the_problem():
    session, sent, _ = session_for()
    session.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x__y", "arguments": {}}}
    )
    assert "HARNESS_MCP_TOKEN" in sent[0]["error"]["message"]


def _lazy_view():
    from harness.config import Config, PolicyConfig

    policy = PolicyConfig(name="lazy", servers=(), exposure="lazy")
    return build_view(policy, Config(policies={"lazy": policy}), {})


# ---------------------------------------------------------------- m10: tiers and listings


def _tiered_view(read_only: bool):
    from harness.config import Config, PolicyConfig, UpstreamConfig

    upstream = UpstreamConfig(name="everything", argv=("x",), write_tools=("get-env",))
    policy = PolicyConfig(name="p", servers=("everything",))
    catalog = {
        "everything": [
            {"name": "get-env", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
            {"name": "echo", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}},
            {"name": "write-file", "inputSchema": {"type": "object"}},
        ]
    }
    config = Config(upstreams={"everything": upstream}, policies={"p": policy})
    return build_view(policy, config, catalog, read_only=read_only)


def test_a_write_tools_override_shows_in_the_listed_read_only_hint():
    listed = {t["name"]: t for t in json.loads(_tiered_view(read_only=False).listing_json)}
    assert listed["everything__get-env"]["annotations"]["readOnlyHint"] is False
    assert listed["everything__echo"]["annotations"]["readOnlyHint"] is True


def test_a_read_only_harness_is_not_listed_write_tools_but_calling_one_names_the_tier():
    view = _tiered_view(read_only=True)
    assert [t["name"] for t in json.loads(view.listing_json)] == ["everything__echo", *FACADE_READ]
    assert view.resolve("everything__write-file") is not None  # still refused as a write tool


# ---------------------------------------------------------------- found by the fuzzer (bench/fuzz.py)


@pytest.mark.parametrize("depth", [129, 1000, 100_000])
def test_fuzz_deep_nesting_is_a_parse_error_never_a_dropped_connection(depth):
    # Before: a RecursionError escaped the parser and asyncio closed the whole connection.
    line = ("[" * depth + "]" * depth).encode()
    with pytest.raises(jsonrpc.NotJSON, match="nested deeper than 128 levels"):
        jsonrpc.parse(line)


def test_fuzz_a_call_nested_too_deep_is_answered_with_its_id_and_recorded():
    session, sent, events = session_for()
    deep = "[" * 500 + "]" * 500
    line = (
        '{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"x__y","arguments":{"a":'
        + deep
        + "}}}"
    ).encode()
    with pytest.raises(jsonrpc.NotJSON) as refused:
        jsonrpc.parse(line)
    session.refuse_unparsable(line, refused.value.reason)
    assert sent[0]["id"] == "d" and "nested deeper" in sent[0]["error"]["message"]
    (row,) = calls(events)
    assert (row.outcome, row.error_reason) == ("denied", "invalid_request")


def test_fuzz_nesting_up_to_the_limit_and_wide_messages_parse():
    assert jsonrpc.parse(("[" * 128 + "]" * 128).encode()) is not None
    wide = json.dumps({"items": [{"a": [1]} for _ in range(5000)]}).encode()
    assert len(jsonrpc.parse(wide)["items"]) == 5000


@pytest.mark.parametrize("request_id", [[1], {"a": 1}, True, 1.0, None])
def test_fuzz_a_cancel_naming_no_valid_id_is_ignored(request_id):
    # Before: a list requestId raised TypeError (unhashable) inside the session; true cancelled id 1.
    session, sent, _ = session_for()
    session.handle(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    )
    assert sent == []
