"""Child-process helpers shared by upstreams and harnesses: environments, bounded logs, stopping."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

KILLED_EXIT_S = 1.0
"""How long a group's SIGKILL waits for the leader's exit to be reported (it is at once, unless the
process is stuck in the kernel)."""

MAX_LOG_BYTES = 2 << 20
"""``tail_lines`` reads at most this much of a log (its rolled-over part included)."""

MAX_PARTIAL_LINE = 64 << 10
"""A scrubbed log holds back at most this much of a line that has not ended (then writes it)."""

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
    """An append-only log file that rolls over to ``<name>.1`` past ``limit`` bytes.

    With ``scrub`` (text → text: the daemon's held secrets redacted), what is written passes through
    it a complete line at a time, so a secret split across two writes is still caught: a partial
    line waits for its end (or for :data:`MAX_PARTIAL_LINE` bytes, or :meth:`close`).
    """

    def __init__(self, path: Path, limit: int = 1 << 20, scrub: Callable[[str], str] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.limit = limit
        self._scrub = scrub
        self._partial = b""
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        self._size = self._file.tell()

    def scrubbed(self, text: str) -> str:
        """``text`` as this log would keep it (the held secrets redacted)."""
        return text if self._scrub is None else self._scrub(text)

    def write(self, data: bytes) -> None:
        """Append bytes (their complete lines, when scrubbing), rolling over first when they would
        pass the limit."""
        if self._scrub is not None:
            data = self._partial + data
            end = data.rfind(b"\n") + 1
            if not end and len(data) < MAX_PARTIAL_LINE:
                self._partial = data
                return
            end = end or len(data)
            data, self._partial = self._scrubbed_bytes(data[:end]), data[end:]
        self._append(data)

    def _scrubbed_bytes(self, data: bytes) -> bytes:
        """Bytes through ``scrub``; bytes that are not UTF-8 pass through unchanged."""
        return self.scrubbed(data.decode(errors="surrogateescape")).encode(errors="surrogateescape")

    def _append(self, data: bytes) -> None:
        if not data:
            return
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
        """Write what is left of a partial line, then close the file."""
        if self._partial and not self._file.closed:
            partial, self._partial = self._partial, b""
            self._append(self._scrubbed_bytes(partial))
        self._file.close()


def tail_lines(path: Path, count: int, limit: int = MAX_LOG_BYTES) -> list[str]:
    """The last ``count`` lines of ``path`` (continuing into its rolled-over ``.1``), reading at most
    ``limit`` bytes; an absent log has no lines."""
    text = b""
    budget = limit
    for part in (path, path.with_name(path.name + ".1")):
        try:
            with open(part, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                take = min(size, budget)
                f.seek(size - take)
                data = f.read(take)
        except FileNotFoundError:
            continue
        if take < size:  # cut inside a line: drop its tail end
            data = data[data.find(b"\n") + 1 :]
        text = data + text
        budget -= take
        if text.count(b"\n") >= count or budget <= 0:
            break
    return text.decode(errors="replace").splitlines()[-count:]


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
