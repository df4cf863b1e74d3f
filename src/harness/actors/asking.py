"""The one way to talk to the daemon's actors: tell them a message, or ask with an :class:`Ask`
envelope whose answer comes back through a callback (never a blocking pykka future on the loop).

- :func:`tell_then`: continue on the loop once the actor answered (a rare, acknowledged hand-off);
- :func:`ask`: await the answer on the loop;
- :func:`ask_from_thread`: wait for it on a worker thread (never on the loop);
- :class:`AnswersAsks`: the message handling every actor of the daemon shares.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pykka

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ask:
    """Envelope: handle ``message`` as usual, then pass the answer (or the error) to ``reply``."""

    message: Any
    reply: Callable[[Any, BaseException | None], None]


@dataclass(frozen=True)
class Barrier:
    """Answered (with None) once everything told to the actor before it has been handled."""


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


def ask_from_thread(actor: pykka.ActorRef[Any], message: Any, timeout: float) -> Any:
    """The actor's answer to ``message``, waited for on the calling worker thread (not the loop)."""
    answer: Future[Any] = Future()

    def reply(value: Any, exc: BaseException | None) -> None:
        if exc is not None:
            answer.set_exception(exc)
        else:
            answer.set_result(value)

    actor.tell(Ask(message, reply))
    return answer.result(timeout)


class AnswersAsks:
    """Mixin for pykka actors: unwraps :class:`Ask` envelopes around ``handle``, answers
    :class:`Barrier`, and refuses an unknown message loudly without dying: an asker gets the error,
    a teller's mistake is logged with its traceback."""

    def handle(self, message: Any) -> Any:
        """Handle one message; subclasses override and raise ``TypeError`` on anything unknown."""
        raise TypeError(f"{type(self).__name__}: unhandled message {message!r}")

    def _dispatch(self, message: Any) -> Any:
        if isinstance(message, Barrier):
            return None
        return self.handle(message)

    def on_receive(self, message: Any) -> Any:
        """pykka hook: answer asks through their reply callback, handle everything else."""
        if isinstance(message, Ask):
            try:
                answer = self._dispatch(message.message)
            except Exception as exc:
                message.reply(None, exc)
            else:
                message.reply(answer, None)
            return None
        try:
            return self._dispatch(message)
        except Exception:
            log.exception("%s refused a told message", type(self).__name__)
            return None
