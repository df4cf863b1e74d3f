"""Eight sessions on one shared upstream at once, each making progress calls, cancellations and plain
calls, 50 rounds: every progress notification and every result reaches only the session (and the
call) it belongs to. A single misroute fails the test: each call's progress messages carry its own
tag, which names the harness and the call."""

from __future__ import annotations

import json

import anyio
import apsw
import pytest
from mcp import Client, types

from support import (
    DEMO_UPSTREAM,
    bridge_params,
    http_upstream,
    idle_harnesses,
    probe_argv,
    read_out,
    toml_list,
    wait_until,
)

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


HTTP_ROUNDS = 100


def test_eight_sessions_of_both_eras_elicit_progress_and_cancel_at_once_on_an_http_upstream(start_daemon):
    """The same, on a Streamable HTTP upstream whose tools also elicit: four 2026-07-28 sessions (they
    reach it through its 2026-07-28 twin, and its ``ask`` answers them with an input_required result)
    and four 2025-11-25 ones (it asks them by a request of its own), 100
    rounds each of a progress call, an eliciting call, a cancelled call and a plain one, all at once.
    Each elicitation's message is its call's tag and each session answers with its own name, so an
    elicitation or an answer delivered to another session shows in the result."""
    upstream, port = http_upstream("ok")
    names = [f"h{i}" for i in range(SESSIONS)]
    config = f'[mcp.web]\nurl = "http://127.0.0.1:{port}/mcp"\nmax_concurrency = 64\n\n'
    config += '[mcp_policy.p]\nservers = ["web"]\n\n' + idle_harnesses(dict.fromkeys(names, "p"))
    try:
        daemon = start_daemon(config)
        envs = daemon.harness_envs()
        seen = anyio.run(_all_sessions, envs)
    finally:
        upstream.terminate()
        upstream.wait(10)
        upstream.stdout.close()
    for name in names:
        mine = seen[name]
        assert mine["version"] == ("2026-07-28" if int(name[1:]) % 2 == 0 else "2025-11-25")
        assert sorted(mine["elicited"]) == sorted(f"{name}-ask-{r}" for r in range(HTTP_ROUNDS))
        for r, (progress, messages, asked, echo, cancelled) in enumerate(mine["rounds"]):
            assert progress == f"{name}-progress-{r}" and messages == [progress] * STEPS, (name, r)
            assert asked == f"{name}-ask-{r}:{name}", (name, r, asked)
            assert echo == f"{name}-{r}" and cancelled, (name, r)


async def _all_sessions(envs: dict[str, dict[str, str]]) -> dict[str, dict]:
    seen: dict[str, dict] = {}
    async with anyio.create_task_group() as group:
        for name, env in envs.items():
            group.start_soon(_one_session, name, env, seen)
    return seen


async def _one_session(name: str, env: dict[str, str], seen: dict[str, dict]) -> None:
    elicited: list[str] = []

    async def on_elicit(context, params) -> types.ElicitResult:
        elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": name})

    def text(result) -> str:
        return result.content[0].text

    mode = "auto" if int(name[1:]) % 2 == 0 else "legacy"
    async with Client(bridge_params(env), mode=mode, cache=None, elicitation_callback=on_elicit) as client:
        rounds = []
        for r in range(HTTP_ROUNDS):
            out: dict[str, object] = {"messages": [], "cancelled": False}

            async def progress(r: int = r, out: dict = out) -> None:
                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    out["messages"].append(message)

                tag = f"{name}-progress-{r}"
                arguments = {"steps": STEPS, "tag": tag}
                out["progress"] = text(
                    await client.call_tool("web__progress", arguments, progress_callback=on_progress)
                )

            async def ask(r: int = r, out: dict = out) -> None:
                out["asked"] = text(await client.call_tool("web__ask", {"tag": f"{name}-ask-{r}"}))

            async def echo(r: int = r, out: dict = out) -> None:
                out["echo"] = text(await client.call_tool("web__echo", {"text": f"{name}-{r}"}))

            async def cancelled(out: dict = out) -> None:
                with anyio.move_on_after(0.03) as scope:
                    await client.call_tool("web__sleep", {"ms": 2000})
                out["cancelled"] = scope.cancelled_caught

            async with anyio.create_task_group() as group:
                for step in (progress, ask, echo, cancelled):
                    group.start_soon(step)
            rounds.append((out["progress"], out["messages"], out["asked"], out["echo"], out["cancelled"]))
        seen[name] = {"version": client.session.protocol_version, "elicited": elicited, "rounds": rounds}
