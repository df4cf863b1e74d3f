"""The event bus: one publish point; the log gets everything, subscribers get their types."""

from __future__ import annotations

from harness.actors.bus import EventBus
from harness.events import CircuitClosed, CircuitOpened, DaemonStopped, Event


def test_every_event_reaches_the_log_and_only_subscribers_of_its_type_get_it_in_order():
    logged: list[Event] = []
    heard: list[Event] = []
    bus = EventBus(logged.append)
    bus.subscribe((CircuitOpened,), heard.append)
    events = [
        CircuitOpened(ts=1.0, upstream="a", failures=5, cooldown_s=30.0),
        DaemonStopped(ts=2.0, reason="r"),
        CircuitOpened(ts=3.0, upstream="b", failures=5, cooldown_s=30.0),
    ]
    for event in events:
        bus.publish(event)
    assert logged == events
    assert heard == [events[0], events[2]]
    assert (bus.subscribers(CircuitOpened), bus.subscribers(CircuitClosed)) == (1, 0)


def test_a_failing_subscriber_costs_nobody_else_their_event(caplog):
    heard: list[Event] = []

    def broken(_event: Event) -> None:
        raise RuntimeError("bug")

    bus = EventBus(lambda _e: None)
    bus.subscribe((CircuitClosed,), broken)
    bus.subscribe((CircuitClosed,), heard.append)
    bus.publish(CircuitClosed(ts=1.0, upstream="a"))
    assert len(heard) == 1
    assert any("subscriber failed" in r.message for r in caplog.records)


def test_a_dead_actor_subscriber_is_skipped_quietly():
    import pykka

    class Quiet(pykka.ThreadingActor):
        def on_receive(self, message: object) -> None:
            return None

    ref = Quiet.start()
    ref.stop()
    logged: list[Event] = []
    bus = EventBus(logged.append)
    bus.subscribe_actor((CircuitClosed,), ref)
    bus.publish(CircuitClosed(ts=1.0, upstream="a"))
    assert len(logged) == 1
