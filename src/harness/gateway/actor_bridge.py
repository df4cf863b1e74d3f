"""Continuing on the loop after an actor handled a message: rare, acknowledged hand-offs only
(never the per-call path). Tell + ``call_soon_threadsafe``; never a blocking pykka future."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pykka

from harness.actors.asking import Ask

log = logging.getLogger(__name__)


def tell_then(
    actor: pykka.ActorRef[Any], message: Any, then: Callable[[Any, BaseException | None], None]
) -> None:
    """Tell ``actor`` the message wrapped in :class:`Ask`; ``then(answer, error)`` runs on the loop.

    A dead actor (the daemon is stopping) answers ``(None, None)`` at once: nobody counts any more,
    but the caller still gets its answer.
    """
    loop = asyncio.get_running_loop()

    def reply(value: Any, exc: BaseException | None) -> None:
        loop.call_soon_threadsafe(then, value, exc)

    try:
        actor.tell(Ask(message, reply))
    except pykka.ActorDeadError:
        then(None, None)


async def ask(actor: pykka.ActorRef[Any], message: Any) -> Any:
    """Await the actor's answer to ``message`` (its error is raised here)."""
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if done.done():
            return
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(value)

    tell_then(actor, message, settle)
    return await done
