"""The daemon builds its call records in batches (``record_batch.py``): a record waits a few
milliseconds, keeps the time, latency and arguments of its call's end, and is in the log before any
event published after that end, whatever thread publishes it."""

from __future__ import annotations

import asyncio
import threading
import time

from devtools.sample_call import SAMPLE_SESSION
from harness.actors.bus import EventBus
from harness.events import DaemonStopped, Event, ToolCallCompleted
from harness.gateway.evidence.record_batch import BATCH_S
from harness.gateway.evidence.recording import CallRecorder
from support import await_until


def _call(recorder: CallRecorder, n: int, started: float) -> None:
    recorder.record(
        session=SAMPLE_SESSION,
        upstream="up",
        tool="echo",
        tier="read",
        arguments={"text": f"{n}:ghp_{'a1B2' * 9}"},
        outcome="ok",
        reason=None,
        started=started,
        response_bytes=100,
        span_id="0123456789abcdef",
        exposed="up__echo",
        request_id=n,
    )


def test_a_batched_record_waits_the_window_and_keeps_the_latency_and_time_of_its_calls_end():
    logged: list[Event] = []
    bus = EventBus(logged.append)
    recorder = CallRecorder(bus.publish)
    bus.before_publish(recorder.batch.flush)

    async def scenario() -> None:
        recorder.batch.start(asyncio.get_running_loop())
        ended = time.time()
        _call(recorder, 1, time.perf_counter() - 0.010)  # a call of 10 ms, ended now
        assert logged == []  # its event is built with the window's others
        await await_until(lambda: len(logged) == 1, timeout=5, message="the window's end")
        waited = time.time() - ended
        event = logged[0]
        assert isinstance(event, ToolCallCompleted)
        assert 10 <= event.latency_ms < 10 + 1000 * BATCH_S  # the call's latency, not the wait
        assert abs(event.ts - (ended - 0.010)) < 0.002 and waited >= BATCH_S * 0.9
        assert event.args is not None and "ghp_" not in event.args and event.args_hash  # redacted

    asyncio.run(scenario())


def test_an_event_published_after_a_call_ended_comes_after_its_record_whatever_thread_publishes_it():
    logged: list[Event] = []
    bus = EventBus(logged.append)
    recorder = CallRecorder(bus.publish)
    bus.before_publish(recorder.batch.flush)

    async def scenario() -> None:
        recorder.batch.start(asyncio.get_running_loop())
        for n in range(3):
            _call(recorder, n, time.perf_counter())
        other = threading.Thread(target=bus.publish, args=(DaemonStopped(ts=time.time(), reason="t"),))
        other.start()
        other.join(timeout=5)
        assert [type(e).__name__ for e in logged] == ["ToolCallCompleted"] * 3 + ["DaemonStopped"]
        assert [e.request_id for e in logged[:3]] == ["0", "1", "2"]  # type: ignore[attr-defined]

    asyncio.run(scenario())
