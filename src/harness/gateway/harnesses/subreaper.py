"""The daemon as its descendants' child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``).

Without it, a process that leaves its parent (``setsid -f``, a double fork) is re-parented to
init and its ancestry no longer leads to the harness that started it: it would look like the
operator on the control socket. With it, such an orphan is re-parented to the daemon, so it stays
inside the daemon's tree (``downstream/peers.py`` then gives it read-only rights).

The daemon must then reap the orphans it adopts. asyncio waits for the children it spawned itself
(by pid, at once); :class:`OrphanReaper` reaps only a child that has been a zombie for a whole scan
interval, which no process asyncio waits for ever is. At shutdown, once every child the daemon
started has been stopped and waited for, :meth:`OrphanReaper.finish` reaps every zombie child at
once: an orphan killed with its upstream's group is not left for init, which may reap it late.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness.gateway.processes import KILLED_EXIT_S

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
SCAN_INTERVAL_S = 2.0


def set_subreaper(on: bool) -> bool:
    """Make this process its descendants' subreaper (or stop); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int, proc: Path) -> set[int]:
    children: set[int] = set()
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return children
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            children.update(int(c) for c in (task / "children").read_text().split())
    return children


def zombie_children(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The children of ``pid`` that are zombies."""
    zombies = set()
    for child in _children(pid, proc):
        with contextlib.suppress(OSError):
            raw = (proc / str(child) / "stat").read_bytes()
            if raw[raw.rfind(b")") + 2 : raw.rfind(b")") + 3] == b"Z":
                zombies.add(child)
    return zombies


_SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


def killed_children(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The children of ``pid`` with a SIGKILL pending: killed, not dead yet (a zombie has none)."""
    killed = set()
    for child in _children(pid, proc):
        with contextlib.suppress(OSError, ValueError):
            for line in (proc / str(child) / "status").read_text().splitlines():
                if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & _SIGKILL_BIT:
                    killed.add(child)
                    break
    return killed


def adopt_orphans() -> OrphanReaper | None:
    """Become this process's descendants' subreaper and reap the orphans it adopts (on the running
    loop); None where that is unsupported."""
    if not set_subreaper(True):
        return None
    reaper = OrphanReaper()
    reaper.start()
    return reaper


class OrphanReaper:
    """Reaps adopted orphans: a zombie child seen at two scans in a row."""

    def __init__(
        self, interval: float = SCAN_INTERVAL_S, scan: Callable[[int], set[int]] = zombie_children
    ) -> None:
        self._interval = interval
        self._scan = scan
        self._task: asyncio.Task[None] | None = None
        self.reaped = 0

    def start(self) -> None:
        """Begin scanning (on the running loop)."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        """Stop scanning."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def reap_zombies(self) -> None:
        """Reap every zombie child now (only when the daemon waits for none of its own children)."""
        for pid in self._scan(os.getpid()):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    self.reaped += 1

    async def finish(self, within: float = KILLED_EXIT_S) -> None:
        """Stop scanning, reap every zombie child, and stop being the subreaper. A child killed
        but not dead yet (a grandchild of a group killed a moment ago) is waited for, ``within``
        seconds at most, and reaped."""
        self.stop()
        deadline = time.monotonic() + within
        self.reap_zombies()
        while killed_children(os.getpid()) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            self.reap_zombies()
        set_subreaper(False)

    async def _run(self) -> None:
        seen: set[int] = set()
        me = os.getpid()
        while True:
            await asyncio.sleep(self._interval)
            zombies = await asyncio.to_thread(self._scan, me)
            for pid in zombies & seen:
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        self.reaped += 1
            seen = zombies
