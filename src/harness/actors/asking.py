"""Asking an actor from the event loop without blocking it (tell + ``call_soon_threadsafe`` reply),
and the message handling every actor of the daemon shares."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ask:
    """Envelope: handle ``message`` as usual, then pass the answer (or the error) to ``reply``."""

    message: Any
    reply: Callable[[Any, BaseException | None], None]


@dataclass(frozen=True)
class Barrier:
    """Answered (with None) once everything told to the actor before it has been handled."""


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
