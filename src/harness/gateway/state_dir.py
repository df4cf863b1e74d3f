"""The state dir: its files, its mode, and the one-daemon-per-dir lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
from dataclasses import dataclass, field
from pathlib import Path

from harness.store.location import STORE_FILE

MAX_SOCKET_PATH = 107
"""Longest AF_UNIX path Linux accepts (sun_path is 108 bytes with the NUL)."""


class StateDirError(Exception):
    """The state dir cannot be used (locked by another daemon, socket path too long, …)."""


_FILES = {
    "db": STORE_FILE,
    "socket": "harness.sock",
    "lock": "harness.lock",
    "upstream_logs": "upstreams",
    "harness_logs": "harnesses",
    "clients": "clients",
    "running": "running.json",
}


@dataclass(frozen=True)
class StatePaths:
    """Where the daemon keeps things, all inside ``root``."""

    root: Path
    db: Path = field(init=False)
    """The APSW store."""
    socket: Path = field(init=False)
    """The control socket."""
    lock: Path = field(init=False)
    """The one-daemon lock file."""
    upstream_logs: Path = field(init=False)
    """Each upstream's stderr, bounded."""
    harness_logs: Path = field(init=False)
    """Each harness's output, bounded."""
    clients: Path = field(init=False)
    """The client configurations adapters generate, one folder per harness."""
    running: Path = field(init=False)
    """The harnesses running now (pid, start time, run id), for the next daemon after a crash."""

    def __post_init__(self) -> None:
        for attribute, name in _FILES.items():
            object.__setattr__(self, attribute, self.root / name)


def _user(uid: int) -> str:
    """A uid's user name, else the number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check_owned(paths: StatePaths) -> None:
    """Refuse a state dir, or a store or lock file in it, that another user owns (as ssh does):
    that user could replace the socket (and capture bridge tokens), the logs or the store."""
    me = os.geteuid()
    for path in (paths.root, paths.db, paths.lock):
        try:
            uid = os.stat(path).st_uid
        except FileNotFoundError:
            continue
        if uid != me:
            raise StateDirError(
                f"{path} is owned by {_user(uid)} (uid {uid}), not by {_user(me)} who runs the daemon: "
                f"refused; `chown {_user(me)} {path}` or use another --state-dir"
            )


class DaemonLock:
    """An exclusive ``flock`` on the state dir's lock file, held for the daemon's life."""

    def __init__(self, paths: StatePaths) -> None:
        self._paths = paths
        self._fd: int | None = None

    def acquire(self) -> None:
        """Create the state dir (0700; one we own is tightened to 0700, one another user owns is
        refused), take the lock, and clean up a stale socket."""
        root = self._paths.root
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_owned(self._paths)
        os.chmod(root, 0o700)
        if len(os.fsencode(self._paths.socket)) > MAX_SOCKET_PATH:
            raise StateDirError(
                f"socket path {self._paths.socket} is longer than {MAX_SOCKET_PATH} bytes; "
                "use a shorter --state-dir"
            )
        fd = os.open(self._paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StateDirError(f"another daemon is running for {root} (pid {other})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        with contextlib.suppress(FileNotFoundError):
            self._paths.socket.unlink()  # stale: we hold the lock, so no daemon owns it

    def release(self) -> None:
        """Remove the socket and drop the lock."""
        with contextlib.suppress(FileNotFoundError):
            self._paths.socket.unlink()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
