"""Eight sessions on one shared upstream at once, each making progress calls, cancellations and plain
calls, 50 rounds: every progress notification and every result reaches only the session (and the
call) it belongs to. A single misroute fails the test: each call's progress messages carry its own
tag, which names the harness and the call."""

from __future__ import annotations

import json

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
    expected = SESSIONS * ROUNDS * 4
    rows = wait_until(lambda: len(r := daemon.calls()) >= expected and r, timeout=30)
    for name in names:
        mine = [(r["tool"], r["outcome"]) for r in rows if r["harness"] == name]
        assert mine.count(("progress", "ok")) == 2 * ROUNDS
        assert mine.count(("echo", "ok")) == ROUNDS
        assert mine.count(("sleep", "cancelled")) == ROUNDS
    assert len(rows) == expected
