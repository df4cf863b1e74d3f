"""Who hears which event: every subscription to the daemon's bus, declared here and only here, with
the thread its subscriber runs on (``harness doctor --wiring`` prints it). Also the two hand-offs
that do not go through the bus, so the whole flow of derived facts reads in one place."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pykka

from harness.actors.bus import Deliver, EventBus
from harness.events import Event, HarnessExited, ToolCallCompleted, ToolCatalogFetched
from harness.gateway.evidence.metrics import UPSTREAM_EVENTS

PUBLISHER = "publisher"
"""Runs on the thread that published the event, before ``emit`` returns: must not block."""
ACTOR = "actor"
"""Told to an actor: runs later on that actor's thread, in publish order."""
LOOP = "loop"
"""Runs on the event loop (at once when published there, else handed over to it)."""


@dataclass(frozen=True)
class Subscription:
    """Events of these types go to one subscriber, on the thread ``runs_on`` names."""

    events: tuple[type[Event], ...]
    subscriber: str
    runs_on: str
    does: str


SUBSCRIPTIONS: tuple[Subscription, ...] = (
    Subscription(UPSTREAM_EVENTS, "metrics", PUBLISHER, "upstream state and breaker gauges"),
    Subscription(
        (ToolCallCompleted,), "telemetry", PUBLISHER, "a span per call, when export_telemetry is on"
    ),
    Subscription(
        (ToolCatalogFetched, HarnessExited),
        "policy",
        ACTOR,
        "catalogues into the tool views; an exited run's tokens forgotten; a routing snapshot published",
    ),
    Subscription((HarnessExited,), "unshared upstreams", LOOP, "the harness's shared = false instances stop"),
    Subscription(
        (ToolCatalogFetched,),
        "search",
        PUBLISHER,
        "the search's snapshot is remade once the writer committed",
    ),
)
"""In delivery order: subscribers of one type hear it in this order."""

HAND_OFFS: tuple[tuple[str, str, str, str], ...] = (
    ("policy", "routing snapshot", "live sessions", "policy actor -> loop (each session's mailbox)"),
    (
        "upstream directory",
        "kept tool catalogue",
        "policy",
        "loop -> policy actor (a tell, not logged again)",
    ),
)
"""(from, what, to, threads): the facts passed outside the bus."""

Subscriber = Deliver | pykka.ActorRef[Any]


def connect(bus: EventBus, subscribers: Mapping[str, Subscriber]) -> None:
    """Subscribe each declared subscriber to its events; ``subscribers`` names exactly the table's.
    Call on the event loop (a ``loop`` subscriber is bound to it)."""
    declared = {s.subscriber for s in SUBSCRIPTIONS}
    if declared != subscribers.keys():
        raise ValueError(
            f"the bus wiring declares {sorted(declared)}, the daemon gives {sorted(subscribers)}"
        )
    for entry in SUBSCRIPTIONS:
        target = subscribers[entry.subscriber]
        if entry.runs_on == ACTOR:
            assert isinstance(target, pykka.ActorRef)
            bus.subscribe_actor(entry.events, target)
        else:
            assert not isinstance(target, pykka.ActorRef)
            bus.subscribe(entry.events, _on_loop(target) if entry.runs_on == LOOP else target)


def _on_loop(deliver: Deliver) -> Deliver:
    """``deliver`` run on the current loop: at once from the loop's thread, else handed over."""
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    def hop(event: Event) -> None:
        if threading.get_ident() == loop_thread:
            deliver(event)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(deliver, event)

    return hop


def wiring_table() -> dict[str, list[dict[str, Any]]]:
    """The table as JSON: the subscriptions in delivery order, then the hand-offs."""
    return {
        "subscriptions": [
            {
                "events": [kind.STORED_NAME for kind in entry.events],
                "subscriber": entry.subscriber,
                "runs_on": entry.runs_on,
                "does": entry.does,
            }
            for entry in SUBSCRIPTIONS
        ],
        "hand_offs": [dict(zip(("from", "what", "to", "threads"), row, strict=True)) for row in HAND_OFFS],
    }


def wiring_lines() -> list[str]:
    """The table as text: one line per subscription, then the hand-offs."""
    lines = ["bus subscriptions (event -> subscriber, where it runs: what it does):"]
    for entry in SUBSCRIPTIONS:
        names = ", ".join(kind.STORED_NAME for kind in entry.events)
        lines.append(f"  {names} -> {entry.subscriber} [{entry.runs_on}]: {entry.does}")
    lines.append("hand-offs outside the bus (from: what -> to, threads):")
    lines.extend(f"  {src}: {what} -> {dst} ({threads})" for src, what, dst, threads in HAND_OFFS)
    return lines
