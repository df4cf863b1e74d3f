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
import sys
from collections.abc import Callable
from pathlib import Path

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


def zombie_children(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The children of ``pid`` that are zombies."""
    children: set[int] = set()
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return children
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            children.update(int(c) for c in (task / "children").read_text().split())
    zombies = set()
    for child in children:
        with contextlib.suppress(OSError):
            raw = (proc / str(child) / "stat").read_bytes()
            if raw[raw.rfind(b")") + 2 : raw.rfind(b")") + 3] == b"Z":
                zombies.add(child)
    return zombies


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

    def finish(self) -> None:
        """Stop scanning, reap every zombie child, and stop being the subreaper."""
        self.stop()
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
