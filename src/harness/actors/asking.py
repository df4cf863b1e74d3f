"""Asking an actor from the event loop without blocking it: tell + ``call_soon_threadsafe`` reply."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ask:
    """Envelope: handle ``message`` as usual, then pass the answer (or the error) to ``reply``."""

    message: Any
    reply: Callable[[Any, BaseException | None], None]


class AnswersAsks:
    """Mixin for pykka actors: unwraps :class:`Ask` envelopes around ``handle``."""

    def handle(self, message: Any) -> Any:
        """Handle one message; subclasses override."""
        raise TypeError(f"unhandled message {message!r}")

    def on_receive(self, message: Any) -> Any:
        """pykka hook: answer asks through their reply callback, handle everything else."""
        if isinstance(message, Ask):
            try:
                answer = self.handle(message.message)
            except Exception as exc:
                message.reply(None, exc)
            else:
                message.reply(answer, None)
            return None
        return self.handle(message)
