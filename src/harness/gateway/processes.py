"""Child-process helpers shared by upstreams and harnesses: environments, bounded logs, stopping."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path

KILLED_EXIT_S = 1.0
"""How long a group's SIGKILL waits for the leader's exit to be reported (it is at once, unless the
process is stuck in the kernel)."""

ENV_ALLOWLIST = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR")
"""What a child may inherit from the daemon, plus ``LC_*``; nothing else of the daemon's environment."""


def minimal_env(extra: Mapping[str, str] | None = None, path_first: str | None = None) -> dict[str, str]:
    """The allowlisted part of the daemon's environment, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST or k.startswith("LC_")}
    if path_first:
        env["PATH"] = os.pathsep.join(p for p in (path_first, env.get("PATH", "")) if p)
    env.update(extra or {})
    return env


class BoundedLog:
    """An append-only log file that rolls over to ``<name>.1`` past ``limit`` bytes."""

    def __init__(self, path: Path, limit: int = 1 << 20) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.limit = limit
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        self._size = self._file.tell()

    def write(self, data: bytes) -> None:
        """Append bytes, rolling over first when they would pass the limit."""
        if self._size + len(data) > self.limit:
            self._file.close()
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._file = open(self.path, "ab")  # noqa: SIM115
            self._size = 0
            data = data[-self.limit :]
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def signal_group(pid: int, sig: int) -> None:
    """Send ``sig`` to the process group led by ``pid`` (children are started in their own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def stop_group(
    pid: int, exited: asyncio.Event, term_after: float = 2.0, kill_after: float = 3.0
) -> None:
    """Wait ``term_after`` s for ``exited``, then SIGTERM the group, wait ``kill_after`` s, then SIGKILL it
    and wait (at most ``KILLED_EXIT_S``) for the leader's exit to be reported.

    The group is killed at the end in every case, so grandchildren that outlived the leader go too.
    """
    for sig, wait in ((None, term_after), (signal.SIGTERM, kill_after)):
        if sig is not None:
            signal_group(pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exited.wait(), wait)
        if exited.is_set():
            break
    signal_group(pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(exited.wait(), KILLED_EXIT_S)
