"""An upstream the daemon stops says why: a reload is recorded as a reload, not as a shutdown."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.events import Event, UpstreamStateChanged
from in_process import running_daemon
from support import DEMO_UPSTREAM, await_until, toml_list


def _config(*names: str) -> str:
    return "".join(f"[mcp.{name}]\nargv = {toml_list(DEMO_UPSTREAM)}\n" for name in names)


def test_an_upstream_a_reload_removes_is_stopped_for_the_reload_and_the_rest_for_the_daemon_stopping(
    tmp_path: Path,
):
    config_path = tmp_path / "harness.toml"
    config_path.write_text(_config("gone", "kept"))
    stopped: list[tuple[str, str]] = []

    def heard(event: Event) -> None:
        assert isinstance(event, UpstreamStateChanged)
        if event.state == "stopped":
            stopped.append((event.upstream, event.reason))

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            daemon.bus.subscribe((UpstreamStateChanged,), heard)
            ups = daemon.upstreams
            await await_until(lambda: all(up.link.available for up in ups.values()), timeout=20)
            config_path.write_text(_config("kept"))
            assert (await daemon.reload())["upstreams_changed"] == ["gone"]
            assert stopped == [("gone", "reload")]

    asyncio.run(scenario())
    assert stopped == [("gone", "reload"), ("kept", "daemon stopping")]
