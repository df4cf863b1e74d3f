"""Where a control-socket peer sits in the process tree: kernel peer credentials plus ``/proc``.

``SO_PEERCRED`` gives the pid and uid of the process that called ``connect()``. From that pid the
daemon walks the parent chain in ``/proc/<pid>/stat``: the first process that is a running harness
(its pid, or the session it leads: every harness is spawned in a session of its own) attributes the
peer to that harness; reaching the daemon first means an upstream or an orphan the daemon adopted
(it is the child subreaper, see ``harnesses/subreaper.py``); reaching pid 1 means the peer is
outside the daemon's tree. A peer whose ``/proc`` entry cannot be read is of unknown origin.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Callable, Mapping

from harness.rules.access import PeerOrigin

MAX_DEPTH = 512
"""Parent links followed at most (a deeper chain is of unknown origin)."""

_CRED = struct.Struct("3i")
SUPPORTED = sys.platform.startswith("linux") and hasattr(socket, "SO_PEERCRED")
"""Peer credentials and ``/proc`` ancestry are read on Linux only; elsewhere peers are unverified."""


def peer_credentials(sock: socket.socket) -> tuple[int, int] | None:
    """The (pid, uid) of the peer of a connected AF_UNIX socket, or None where unsupported."""
    if not SUPPORTED:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    except OSError:
        return None
    pid, uid, _gid = _CRED.unpack(raw)
    return pid, uid


def proc_stat(pid: int, proc: str = "/proc") -> tuple[int, int] | None:
    """The (parent pid, session id) of a process, or None if it is gone or unreadable."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[3])
    except (IndexError, ValueError):
        return None


Stat = Callable[[int], tuple[int, int] | None]


class Attributor:
    """Attributes a peer pid to a running harness, the daemon's own tree, or the outside."""

    def __init__(
        self,
        harness_pids: Callable[[], Mapping[int, str]],
        daemon_pid: int | None = None,
        stat: Stat = proc_stat,
        supported: bool = SUPPORTED,
    ) -> None:
        self._harness_pids = harness_pids
        self._daemon_pid = os.getpid() if daemon_pid is None else daemon_pid
        self._stat = stat
        self._supported = supported

    def origin(self, creds: tuple[int, int] | None) -> PeerOrigin:
        """Where the peer with credentials ``creds`` (pid, uid) sits."""
        if creds is None:
            return PeerOrigin("unverified" if not self._supported else "unknown")
        pid, uid = creds
        if pid <= 0:
            return PeerOrigin("unknown", pid, uid)
        harnesses = self._harness_pids()
        current = pid
        for _ in range(MAX_DEPTH):
            if current in harnesses:
                return PeerOrigin("harness", pid, uid, harnesses[current])
            if current == self._daemon_pid:
                return PeerOrigin("daemon", pid, uid)
            stat = self._stat(current)
            if stat is None:
                return PeerOrigin("unknown", pid, uid)
            parent, session = stat
            if session in harnesses:
                return PeerOrigin("harness", pid, uid, harnesses[session])
            if parent <= 0:  # pid 1 (or a kernel thread): the top of the tree
                return PeerOrigin("outside", pid, uid)
            current = parent
        return PeerOrigin("unknown", pid, uid)
