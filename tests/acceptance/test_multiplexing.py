"""Eight sessions on one shared upstream at once, each making progress calls, cancellations and plain
calls, 50 rounds: every progress notification and every result reaches only the session (and the
call) it belongs to. A single misroute fails the test: each call's progress messages carry its own
tag, which names the harness and the call."""

from __future__ import annotations

import json

import apsw
import pytest

from support import DEMO_UPSTREAM, probe_argv, read_out, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

SESSIONS = 8
ROUNDS = 50
STEPS = 4


def _plan(name: str) -> list[dict]:
    def progress(tag: str) -> dict:
        return {
            "op": "call",
            "name": "demo__progress",
            "arguments": {"steps": STEPS, "tag": tag},
            "progress": True,
        }

    round_ = {
        "op": "parallel",
        "steps": [
            progress(f"{name}-a"),
            progress(f"{name}-b"),
            {"op": "call", "name": "demo__sleep", "arguments": {"ms": 2000}, "cancel_after_ms": 30},
            {"op": "call", "name": "demo__echo", "arguments": {"text": name}},
        ],
    }
    return [{"op": "repeat", "times": ROUNDS, "keep": True, "step": round_}]


def _rows_logged(daemon, where: str) -> int:
    conn = apsw.Connection(str(daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(f"SELECT count(*) FROM call_log WHERE {where}").fetchone()[0]
    except apsw.SQLError:  # the projection is not there yet
        return 0
    finally:
        conn.close()


def test_eight_sessions_progress_cancel_and_call_at_once_and_nothing_is_misrouted(start_daemon, tmp_path):
    names = [f"h{i}" for i in range(SESSIONS)]
    config = f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\nmax_concurrency = 64\n\n"
    config += '[mcp_policy.p]\nservers = ["demo"]\n\n'
    for name in names:
        argv = probe_argv(tmp_path / f"{name}.json", "--steps", json.dumps(_plan(name)))
        config += f'[harness.{name}]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n\n'
    daemon = start_daemon(config)
    for name in names:
        out = read_out(tmp_path / f"{name}.json", timeout=180)
        [repeat] = out["steps"]
        assert repeat["repeated"] == ROUNDS and repeat["errors"] == 0, repeat
        for round_ in repeat["results"]:
            a, b, cancelled, echo = round_["parallel"]
            for call, tag in ((a, f"{name}-a"), (b, f"{name}-b")):
                assert call["result"]["content"][0]["text"] == tag
                assert call["messages"] == [tag] * STEPS, (name, call["messages"])  # its own, all of them
                assert call["progress"] == list(range(1, STEPS + 1))
            assert cancelled.get("cancelled") is True, cancelled
            assert echo["result"]["content"][0]["text"] == name
    answered = SESSIONS * ROUNDS * 3  # the progress and echo calls
    wait_until(lambda: _rows_logged(daemon, "tool != 'sleep'") >= answered, timeout=60, message="their rows")
    rows = daemon.calls()
    for name in names:
        mine = [(r["tool"], r["outcome"]) for r in rows if r["harness"] == name]
        assert mine.count(("progress", "ok")) == 2 * ROUNDS
        assert mine.count(("echo", "ok")) == ROUNDS
        # Every cancelled call that reached the gateway is one `cancelled` row. Under load the SDK
        # client can hit its 30 ms deadline before it starts writing the request, and then never sends
        # it (mcp.shared.jsonrpc_dispatcher: "a pre-existing cancellation while the request provably
        # never started"): nothing reached the gateway, nothing to log (seen once in 1,600 calls with
        # two test workers). So at most ROUNDS, and never another outcome.
        sleeps = [outcome for tool, outcome in mine if tool == "sleep"]
        assert set(sleeps) <= {"cancelled"} and ROUNDS - 5 <= len(sleeps) <= ROUNDS, sleeps
