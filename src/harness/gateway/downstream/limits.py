"""Bounds on control-socket connections, and logging that a flood cannot turn into a flood of lines.

Numbers (docs/control-socket.md explains them):

- a connection must complete its preamble line within ``PREAMBLE_TIMEOUT_S`` (5 s);
- at most ``PER_PID`` (16) open connections per peer process: a bridge or a CLI uses one;
- at most ``PER_HARNESS`` (64) per harness's process tree, ``UNATTRIBUTED`` (64) for the daemon's
  own tree and peers of unknown origin together, ``OUTSIDE`` (256) for processes outside the
  daemon's tree (the operator's CLI, agents started by hand); but never more than a quarter of the
  total per harness or for the unattributed, nor half of it for the outside, so no one origin can
  take every place;
- at most ``total`` in all: a quarter of the daemon's file-descriptor limit, between 16 and 4096, so
  the daemon keeps at least three quarters of its descriptors for upstreams, harnesses and its store
  however the socket is flooded.

The socket is 0600 in a 0700 directory: only the daemon's own uid (and root) can connect, so a cap
per uid is the total cap.
"""

from __future__ import annotations

import logging
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.rules.access import PeerOrigin

PREAMBLE_TIMEOUT_S = 5.0
PER_PID = 16
PER_HARNESS = 64
UNATTRIBUTED = 64
OUTSIDE = 256
MIN_TOTAL = 16
MAX_TOTAL = 4096


def total_cap(nofile: int | None = None) -> int:
    """The total connection cap for a daemon whose soft descriptor limit is ``nofile``."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY or nofile <= 0:
        return MAX_TOTAL
    return max(MIN_TOTAL, min(MAX_TOTAL, nofile // 4))


@dataclass(frozen=True)
class Limits:
    """The caps and the preamble deadline of one control socket."""

    total: int
    per_pid: int = PER_PID
    per_harness: int = PER_HARNESS
    unattributed: int = UNATTRIBUTED
    outside: int = OUTSIDE
    preamble_timeout: float = PREAMBLE_TIMEOUT_S
    per_uid: int | None = None
    """Connections per peer uid other than the daemon's (None: no such cap; the control socket
    admits no other uid but root)."""
    name: str = "the control socket"
    """What the caps guard, in refusals."""

    @classmethod
    def sized(
        cls,
        total: int,
        preamble_timeout: float = PREAMBLE_TIMEOUT_S,
        per_uid: int | None = None,
        name: str = "the control socket",
    ) -> Limits:
        """Caps for a total of ``total``: no origin's share above a quarter (the outside: a half)."""
        return cls(
            total=total,
            per_harness=max(1, min(PER_HARNESS, total // 4)),
            unattributed=max(1, min(UNATTRIBUTED, total // 4)),
            outside=max(1, min(OUTSIDE, total // 2)),
            preamble_timeout=preamble_timeout,
            per_uid=per_uid,
            name=name,
        )

    @classmethod
    def for_this_process(cls) -> Limits:
        """Caps sized to this process's descriptor limit."""
        return cls.sized(total_cap())


def bucket(origin: PeerOrigin) -> str:
    """The cap an origin counts against."""
    if origin.kind == "harness":
        return f"harness:{origin.harness}"
    if origin.kind in ("outside", "unverified"):
        return "outside"
    return "unattributed"


class ConnectionCounts:
    """Open connections per peer pid, per origin bucket, per foreign uid and in total."""

    def __init__(self, limits: Limits, own_uid: int | None = None) -> None:
        self.limits = limits
        self.total = 0
        self._own_uid = os.getuid() if own_uid is None else own_uid
        self._pids: Counter[int] = Counter()
        self._buckets: Counter[str] = Counter()
        self._uids: Counter[int] = Counter()

    def refuse_early(self, pid: int) -> str | None:
        """Why a new connection from ``pid`` is refused before its origin is known (None: not)."""
        if self.total >= self.limits.total:
            return f"{self.limits.name} is full ({self.limits.total} connections); try again later"
        if pid > 0 and self._pids[pid] >= self.limits.per_pid:
            return f"process {pid} already has {self.limits.per_pid} connections open (the limit)"
        return None

    def _cap(self, key: str) -> int:
        if key.startswith("harness:"):
            return self.limits.per_harness
        return self.limits.outside if key == "outside" else self.limits.unattributed

    def acquire(self, origin: PeerOrigin) -> str | None:
        """Count a connection from ``origin``, or say why it is refused (then nothing is counted)."""
        refusal = self.refuse_early(origin.pid)
        if refusal is not None:
            return refusal
        key = bucket(origin)
        cap = self._cap(key)
        if self._buckets[key] >= cap:
            who = origin.harness if origin.kind == "harness" else key
            return f"{who!s} already has {cap} connections open (the limit)"
        foreign = self._foreign(origin)
        if foreign and self.limits.per_uid is not None and self._uids[origin.uid] >= self.limits.per_uid:
            return f"uid {origin.uid} already has {self.limits.per_uid} connections open (the limit)"
        self.total += 1
        self._pids[origin.pid] += 1
        self._buckets[key] += 1
        if foreign:
            self._uids[origin.uid] += 1
        return None

    def _foreign(self, origin: PeerOrigin) -> bool:
        """A peer of a known uid other than the daemon's."""
        return origin.uid >= 0 and origin.uid != self._own_uid

    def release(self, origin: PeerOrigin) -> None:
        """Forget one connection counted by :meth:`acquire`."""
        self.total -= 1
        _decrement(self._pids, origin.pid)
        _decrement(self._buckets, bucket(origin))
        if self._foreign(origin):
            _decrement(self._uids, origin.uid)

    def open_for(self, origin: PeerOrigin) -> tuple[int, int]:
        """The connections open for ``origin``'s pid and for its bucket."""
        return self._pids[origin.pid], self._buckets[bucket(origin)]


def _decrement(counter: Counter[Any], key: Any) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


class RateLimitedLog:
    """At most one line per ``interval`` seconds per reason; the lines skipped are counted and the
    count is said on the next line for that reason."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}
        self._skipped: Counter[str] = Counter()

    def note(self, reason: str, message: str, level: int = logging.WARNING) -> bool:
        """Log ``message`` under ``reason`` unless one was logged within the interval; True if logged."""
        now = self._clock()
        last = self._last.get(reason)
        if last is not None and now - last < self._interval:
            self._skipped[reason] += 1
            return False
        self._last[reason] = now
        skipped = self._skipped.pop(reason, 0)
        if skipped:
            message = f"{message} (and {skipped} more like it since the last such line)"
        self._log.log(level, "%s", message)
        return True
