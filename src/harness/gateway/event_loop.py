"""The daemon's event loop: uvloop (libuv) where it is installed, else asyncio's own.

``HARNESS_EVENT_LOOP`` chooses: unset or empty means uvloop when it can be imported and asyncio
otherwise; ``asyncio`` always asyncio's own loop; ``uvloop`` insists on uvloop (a clear error
without it). ``harness status`` shows the loop the daemon runs on.

Children and signals under uvloop: libuv reaps only the children it spawned, each by its pid, from
its own SIGCHLD handler, as asyncio's child watcher does; the orphan reaper
(:mod:`harness.gateway.harnesses.subreaper`) never waits for a child that leads its own session,
which every child the daemon spawns does. Threads reach the loop through ``call_soon_threadsafe``,
which both loops provide.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

LOOP_ENV = "HARNESS_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


class LoopChoiceError(Exception):
    """``HARNESS_EVENT_LOOP`` names a loop this process cannot run."""


def loop_factory(choice: str | None = None) -> LoopFactory | None:
    """What makes the daemon's loop: uvloop's factory, or None for asyncio's default.

    ``choice`` is ``HARNESS_EVENT_LOOP``'s value (read from the environment when None)."""
    wanted = os.environ.get(LOOP_ENV, "") if choice is None else choice
    if wanted not in ("", *CHOICES):
        raise LoopChoiceError(f"{LOOP_ENV}={wanted!r}: expected one of {', '.join(CHOICES)} (or unset)")
    if wanted == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise LoopChoiceError(f"{LOOP_ENV}=uvloop but uvloop is not installed") from None
        return None
    return uvloop.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: the kind of ``loop``."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
