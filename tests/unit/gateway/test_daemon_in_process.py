"""The daemon run in the test's own process (the acceptance tests run it as a process of its own): a
real upstream child, the demo agent spawned as a harness and connecting through a real `harness mcp`
bridge with the official SDK client, the control socket, a reload, an upstream restart, a clean stop.

Run in-process, the test itself sits in the daemon's process tree: on the control socket it is no one
(refused every command; it asks the control plane directly as the operator), and an MCP session it
opens carries no harness identity.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness import open_store
from harness.cli.common import CliError, control_request
from harness.config import load_config
from harness.demo import agent as demo_agent
from harness.gateway.daemon import Daemon
from harness.rules.access import OPERATOR
from support import DEMO_UPSTREAM, PY, await_until, toml_list

WAIT = 30.0

CONFIG = f"""\
[mcp]
default_policy = "p"

[mcp.demo]
argv = {toml_list(DEMO_UPSTREAM)}

[mcp_policy.p]
servers = ["demo"]
{{deny}}

[harness.agent]
argv = {toml_list([PY, "-m", "harness.demo.agent", "--calls", "5", "--pause", "0"])}
mcp_allow = ["read", "write"]
model = "in-process"
"""

EXPECTED = [
    ("agent", "echo", "ok"),
    ("agent", "add", "ok"),
    ("agent", "write_note", "ok"),  # mcp_allow has write
    ("agent", "word_count", "ok"),
    ("agent", "fail", "tool_error"),
]


async def control(daemon: Daemon, command: str, **args: Any) -> Any:
    """One control request over the daemon's socket (a blocking client: on a thread of its own)."""
    return await asyncio.to_thread(control_request, daemon.paths, command, args)


def logged(db: Path) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    with open_store(db) as view:
        return [(r["harness"], r["tool"], r["outcome"]) for r in view.calls()]


async def search_warmed(daemon: Daemon) -> None:
    """Wait until the daemon's search snapshot is of the tool index as it is now."""
    for _ in range(int(WAIT / 0.05)):
        if await daemon.reader.search_warmed():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the tool search was never warmed")


def test_an_in_process_daemon_serves_its_harness_answers_the_control_socket_reloads_and_stops_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    config_path = tmp_path / "harness.toml"
    config_path.write_text(CONFIG.format(deny=""))
    for name in ("HARNESS_MCP_TOKEN", "HARNESS_SOCKET", "HARNESS_NAME", "HARNESS_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "state" / "harness.db"
    children: list[psutil.Process] = []

    async def scenario() -> None:
        daemon = Daemon(load_config(config_path), tmp_path / "state", config_path)
        ready = asyncio.Event()
        running = asyncio.create_task(daemon.run(ready=ready.set))
        try:
            await asyncio.wait_for(ready.wait(), WAIT)
            children.extend(psutil.Process().children(recursive=True))
            await await_until(lambda: logged(db) == EXPECTED, timeout=WAIT, message="the agent's calls")
            await search_warmed(daemon)  # the catalogue's search snapshot made before any search
            with pytest.raises(CliError, match="has no harness identity"):
                await control(daemon, "status")
            status = await daemon.control.answer("status", {}, OPERATOR)
            assert status["upstreams"]["demo"]["state"] == "up" and status["upstreams"]["demo"]["tools"] > 5
            [row] = await daemon.control.answer("list", {}, OPERATOR)
            assert (row["name"], row["policy"]) == ("agent", "p")

            # the demo agent once more, in this process: in the daemon's tree, it gets no identity
            monkeypatch.setenv("HARNESS_SOCKET", str(daemon.paths.socket))
            monkeypatch.setenv("HARNESS_NAME", "inside")
            await asyncio.wait_for(demo_agent.run(calls=2, pause=0), WAIT)

            config_path.write_text(CONFIG.format(deny='deny = ["demo__fail"]'))
            assert await daemon.reload() == {
                "upstreams_changed": [],
                "upstreams_not_up": {},
                "harnesses_stopped": [],
                "failed": [],
            }
            demo = daemon.upstreams["demo"]
            before = demo.pid
            await asyncio.wait_for(demo.restart("restart requested by the test"), WAIT)
            await await_until(
                lambda: demo.link.available and demo.pid != before, timeout=WAIT, message="demo up again"
            )
            await search_warmed(daemon)  # and again for the catalogue fetched after the restart
        finally:
            daemon.request_stop("test over")
            assert await asyncio.wait_for(running, WAIT) == 0

    asyncio.run(scenario())

    # unattributed: no upstream tools and no facade tools; each try is refused and logged as denied
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "inside: 0 tools: "
    assert [line.split(" -> ")[1].split(":")[0] for line in out if " -> " in line] == ["refused"] * 2
    assert logged(db) == [*EXPECTED, (None, "echo", "denied"), (None, "add", "denied")]
    assert children, "the daemon started an upstream and a harness"
    _gone, alive = psutil.wait_procs(children, timeout=10)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert alive == []
    assert not (tmp_path / "state" / "harness.sock").exists()
