"""The writer gives the CPU back every so often while SQLite runs a small group's statements.

On a machine with few cores a thread woken (the loop, on an agent's request; an upstream, on the
loop's) can be queued on the core the writer runs on while the other core is idle, and wait there
for the rest of the writer's time slice (1.4 ms by default on two cores) before the scheduler moves
it: that wait, one commit every ``GROUP_WINDOW_S``, was the calls' tail (bench/README.md, "Issue 26
item 3"). SQLite calls a progress handler every ``every`` virtual-machine steps of a statement; it
yields the CPU there (``sched_yield``: a few µs when nobody waits), so whoever was queued behind
the writer runs within ~0.1 ms instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

GIVE_WAY_EVERY_OPS = 1_000
"""SQLite steps between two yields: ~15 a group of 60 call events (~1.2 ms of the writer's CPU),
about 5 % more of it."""


def _give_way() -> bool:
    os.sched_yield()
    return False  # go on with the statement


@contextmanager
def giving_way(conn: apsw.Connection, every: int = GIVE_WAY_EVERY_OPS) -> Iterator[None]:
    """While the block runs, ``conn``'s statements yield the CPU every ``every`` SQLite steps."""
    conn.set_progress_handler(_give_way, every)
    try:
        yield
    finally:
        conn.set_progress_handler(None)
