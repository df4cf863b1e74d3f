"""After ``kill -9`` of the daemon no harness runs twice: each dies with the daemon, and the next
daemon on the state dir stops what its processes left running before it spawns its own."""

from __future__ import annotations

import contextlib
import secrets
import signal
from collections.abc import Iterator

import psutil
import pytest

from support import wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


def marked(marker: str) -> list[psutil.Process]:
    """Every process on the machine whose command line holds ``marker``."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or ()):
            found.append(p)
    return found


@pytest.fixture
def markers() -> Iterator[dict[str, str]]:
    """A unique ``sleep`` duration per harness (in the argv of the harness and of its child); every
    process holding one is killed at the end, whatever the test left."""
    unique = secrets.randbelow(10**6)
    names = {"alpha": f"7{unique}.1", "beta": f"7{unique}.2"}
    yield names
    for marker in names.values():
        for p in marked(marker):
            with contextlib.suppress(psutil.Error):
                p.kill()


def config_of(markers: dict[str, str]) -> str:
    return "".join(
        f'[harness.{name}]\nargv = ["sh", "-c", "sleep {marker} & wait"]\n\n'
        for name, marker in markers.items()
    )


def test_after_kill_9_of_the_daemon_the_next_one_runs_each_harness_exactly_once(start_daemon, markers):
    first = start_daemon(config_of(markers))
    for marker in markers.values():  # the shell and its sleep, under the first daemon
        wait_until(lambda m=marker: len(first.descendants_running(m)) == 2, timeout=30)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    for marker in markers.values():  # the shells die with the daemon; their sleeps are left
        wait_until(lambda m=marker: [p.name() for p in marked(m)] == ["sleep"], timeout=10)

    second = start_daemon(config_of(markers))

    for name, marker in markers.items():
        wait_until(lambda m=marker: len(second.descendants_running(m)) == 2, timeout=30)
        wait_until(lambda m=marker: len(marked(m)) == 2, timeout=10, message=f"{name}: only the new copy")
        assert {p.pid for p in marked(marker)} == {p.pid for p in second.descendants_running(marker)}
    said = "".join(second.stderr_lines)
    stopped = {e["harness"]: e for e in second.events("harness.survivor_stopped")}
    assert sorted(stopped) == sorted(markers)
    for name in markers:
        [pid] = stopped[name]["pids"]
        assert stopped[name]["leader_alive"] is False
        assert f"harness {name}: stopped a survivor of the previous daemon, pid {pid} (left by run" in said
