"""The daemon as its descendants' child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``).

Without it, a process that leaves its parent (``setsid -f``, a double fork) is re-parented to
init and its ancestry no longer leads to the harness that started it: it would look like the
operator on the control socket. With it, such an orphan is re-parented to the daemon, so it stays
inside the daemon's tree (``downstream/peers.py`` then gives it read-only rights).

The daemon must then reap the orphans it adopts. asyncio waits for the children it spawned itself
(by pid, at once); :class:`OrphanReaper` reaps only a child that has been a zombie for a whole scan
interval, which no process asyncio waits for ever is. At shutdown, once every child the daemon
started has been stopped, :meth:`OrphanReaper.finish` reaps the adopted orphans that are zombies at
once: one killed with its upstream's group is not left for init, which may reap it late.
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

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
SCAN_INTERVAL_S = 2.0
ORPHAN_WAIT_S = 1.0
"""At shutdown, how long the reaper waits for orphans killed but not dead yet (they die at once,
unless stuck in the kernel)."""
ORPHAN_POLL_S = 0.005


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


def stat_fields(pid: int, proc: Path = Path("/proc")) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, …"""
    raw = (proc / str(pid) / "stat").read_bytes()
    return raw[raw.rfind(b")") + 2 :].split()


def zombie_children(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The children of ``pid`` that are zombies."""
    zombies = set()
    for child in _children(pid, proc):
        with contextlib.suppress(OSError, IndexError):
            if stat_fields(child, proc)[0] == b"Z":
                zombies.add(child)
    return zombies


def child_groups(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The process groups of ``pid``'s children (an orphan the daemon adopted keeps its group)."""
    groups = set()
    for child in _children(pid, proc):
        with contextlib.suppress(OSError, IndexError, ValueError):
            groups.add(int(stat_fields(child, proc)[2]))
    return groups


def leads_session(pid: int, proc: Path = Path("/proc")) -> bool:
    """Whether ``pid`` leads a session of its own: every child the daemon starts does
    (``start_new_session``); an orphan it adopted, killed with its upstream's group, does not."""
    try:
        return int(stat_fields(pid, proc)[3]) == pid
    except (OSError, IndexError, ValueError):
        return False


_SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


def killed_children(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The adopted children of ``pid`` killed but not dead yet: a SIGKILL pending, not a zombie
    (whose status may still show it), not leading a session (one the daemon started)."""
    killed = set()
    for child in _children(pid, proc):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat_fields(child, proc)
            if fields[0] == b"Z" or int(fields[3]) == child:
                continue
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
        self,
        interval: float = SCAN_INTERVAL_S,
        scan: Callable[[int], set[int]] = zombie_children,
        killed: Callable[[int], set[int]] = killed_children,
    ) -> None:
        self._interval = interval
        self._scan = scan
        self._killed = killed
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

    async def finish(self, within: float = ORPHAN_WAIT_S) -> None:
        """Stop scanning, reap every adopted orphan that is a zombie, and stop being the subreaper.

        For the daemon's shutdown, once every upstream and harness is stopped: an orphan killed a
        moment before with its upstream's group (SIGKILL pending) is waited for, ``within`` seconds
        at most. A child that leads its own session is never reaped here: the daemon started it,
        and asyncio waits for it (reaping it would take its exit status from asyncio); an orphan
        that made a session of its own, or is still running, is left to init as before.
        """
        self.stop()
        try:
            me = os.getpid()
            deadline = time.monotonic() + within
            while self._killed(me) and time.monotonic() < deadline:
                await asyncio.sleep(ORPHAN_POLL_S)
            for pid in self._scan(me):
                if not leads_session(pid):
                    with contextlib.suppress(ChildProcessError):
                        if os.waitpid(pid, os.WNOHANG)[0] == pid:
                            self.reaped += 1
        finally:
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
