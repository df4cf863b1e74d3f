"""Waiting on an actor from the loop: rare, acknowledged hand-offs only (never the per-call path)."""

from __future__ import annotations

import asyncio
from typing import Any

import pykka

from harness.actors.asking import Ask


async def ask(actor: pykka.ActorRef[Any], message: Any) -> Any:
    """Tell ``actor`` the message wrapped in :class:`Ask` and await its answer on the loop."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def reply(value: Any, exc: BaseException | None) -> None:
        loop.call_soon_threadsafe(_settle, done, value, exc)

    actor.tell(Ask(message, reply))
    return await done


def _settle(target: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if target.done():
        return
    if exc is not None:
        target.set_exception(exc)
    else:
        target.set_result(value)
