"""The one publish point: every event goes to the log and to whoever subscribed to its type.

Nothing else decides who hears what. A subscriber is a delivery function: an actor's ``tell`` (the
event lands in its mailbox), or a loop mailbox (``loop.call_soon_threadsafe``) for state the loop
owns. Publishing never blocks and may happen on any thread: the subscription table is replaced, not
mutated, so a publish reads one consistent table without a lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

import pykka

from harness.events import Event

log = logging.getLogger(__name__)

Deliver = Callable[[Event], object]


class EventBus:
    """Routes each published event to the log's intake, then to the subscribers of its type."""

    def __init__(self, log_intake: Deliver) -> None:
        self._log = log_intake
        self._table: MappingProxyType[type[Event], tuple[Deliver, ...]] = MappingProxyType({})

    def subscribe(self, types: Iterable[type[Event]], deliver: Deliver) -> None:
        """Deliver every later event of these exact types to ``deliver`` (in publish order)."""
        table = dict(self._table)
        for kind in types:
            table[kind] = (*table.get(kind, ()), deliver)
        self._table = MappingProxyType(table)

    def subscribe_actor(self, types: Iterable[type[Event]], actor: pykka.ActorRef[Any]) -> None:
        """Tell every later event of these types to ``actor``; a dead actor is skipped quietly."""

        def tell(event: Event) -> None:
            try:
                actor.tell(event)
            except pykka.ActorDeadError:
                pass  # stopping: the log still has the event

        self.subscribe(types, tell)

    def publish(self, event: Event) -> None:
        """Append to the log (bounded, never blocks), then deliver to the type's subscribers."""
        self._log(event)
        for deliver in self._table.get(type(event), ()):
            try:
                deliver(event)
            except Exception:  # one subscriber's bug must not cost the others their event
                log.exception("a subscriber failed on %s", type(event).__name__)

    def subscribers(self, kind: type[Event]) -> int:
        """How many subscribers an event type has (for tests and the architecture table)."""
        return len(self._table.get(kind, ()))
