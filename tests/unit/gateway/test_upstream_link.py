"""An upstream link's wire, driven through a fake transport (no process): ids, tool names and progress
tokens rewritten and routed back, concurrency slots, deadlines, a lost connection, and the breaker
(a real ``BreakerActor``, a fake clock for its cooldown)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from harness.actors.breaker import BreakerActor
from harness.actors.snapshots import Published
from harness.config import UpstreamConfig
from harness.events import CircuitClosed, CircuitOpened, Event
from harness.gateway.calls.inflight import CallInflight
from harness.gateway.upstream.admission import BreakerGate
from harness.gateway.upstream.link import UpstreamLink
from harness.rules.breaker import CLOSED, BreakerState
from harness.rules.exposure import Route
from support import await_until

WAIT = 5.0


class FakeTransport:
    """What the link sends, as the upstream would receive it."""

    pid = 4242

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.aborted = False
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(copy.deepcopy(message))

    def abort(self) -> None:
        self.aborted = True

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True

    def calls(self) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("method") == "tools/call"]


class FakeCaller:
    """A downstream session as a call sees it: the lines it was sent and how its calls ended."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.ended: list[tuple[Any, str, str | None]] = []

    def send(self, line: bytes) -> None:
        assert line.endswith(b"\n")
        self.lines.append(json.loads(line))

    def call_ended(self, call: CallInflight, outcome: str, reason: str | None, response_bytes: int) -> None:
        assert response_bytes >= 0
        self.ended.append((call.downstream_id, outcome, reason))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    link: UpstreamLink
    transport: FakeTransport
    clock: FakeClock
    breaker_state: Published[BreakerState]
    published: list[Event] = field(default_factory=list)

    def call(
        self,
        caller: FakeCaller,
        downstream_id: Any,
        tool: str = "echo",
        arguments: dict[str, Any] | None = None,
        progress_token: Any = None,
    ) -> CallInflight:
        """Submit a ``tools/call`` as a session does: the exposed name, the caller's id and token."""
        route = Route(exposed=f"up__{tool}", upstream="up", tool=tool, tier="read")
        params: dict[str, Any] = {"name": route.exposed, "arguments": arguments or {}}
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        message = {"jsonrpc": "2.0", "id": downstream_id, "method": "tools/call", "params": params}
        call = CallInflight(
            caller, downstream_id, self.link.new_call_id(), route, arguments, progress_token, self.clock()
        )
        self.link.submit(call, message, params)
        return call

    def answer(self, upstream_id: int, text: str = "done") -> None:
        """The upstream replies to the request it knows as ``upstream_id``."""
        self.link.receive(
            {"jsonrpc": "2.0", "id": upstream_id, "result": {"content": [{"type": "text", "text": text}]}}
        )


@contextlib.asynccontextmanager
async def rig(**settings: Any) -> AsyncIterator[Rig]:
    config = UpstreamConfig(name="up", argv=("unused",), **settings)
    breaker_state: Published[BreakerState] = Published(CLOSED)
    published: list[Event] = []
    breaker = BreakerActor.start(
        "up", config.breaker_failures, config.breaker_cooldown, breaker_state, published.append
    )
    clock = FakeClock()
    try:
        gate = BreakerGate(breaker, breaker_state, config.breaker_cooldown, clock)
        link = UpstreamLink(config, gate=gate, status=Published("up"), clock=clock)
        transport = FakeTransport()
        link.attach(transport)
        yield Rig(link, transport, clock, breaker_state, published)
    finally:
        breaker.stop(timeout=WAIT)


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``scenario`` on a fresh event loop, bounded as a whole."""

    async def bounded() -> None:
        await asyncio.wait_for(scenario(), WAIT * 2)

    asyncio.run(bounded())


def reason_of(line: dict[str, Any]) -> str:
    return line["error"]["data"]["reason"]


def test_a_call_goes_upstream_under_the_links_id_and_tool_name_and_the_reply_returns_with_the_callers_id():
    async def scenario() -> None:
        async with rig() as r:
            alice, bob = FakeCaller(), FakeCaller()
            a = r.call(alice, 1, "echo", {"text": "a"})
            b = r.call(bob, 1, "add", {"a": 1})  # the same downstream id in another session
            first, second = r.transport.calls()
            assert (first["id"], first["params"]["name"]) == (a.upstream_id, "echo")
            assert (second["id"], second["params"]["name"]) == (b.upstream_id, "add")
            assert a.upstream_id != b.upstream_id
            assert first["params"]["arguments"] == {"text": "a"}
            assert r.link.in_flight == 2
            r.answer(b.upstream_id, "for bob")
            r.answer(a.upstream_id, "for alice")
            assert alice.lines == [
                {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "for alice"}]}}
            ]
            assert bob.lines == [
                {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "for bob"}]}}
            ]
            assert alice.ended == bob.ended == [(1, "ok", None)]
            assert r.link.in_flight == 0
            r.answer(a.upstream_id, "again")  # a duplicate reply finds no call
            assert len(alice.lines) == 1

    run(scenario)


def test_progress_tokens_are_rewritten_to_the_upstream_id_and_routed_back_to_their_caller():
    async def scenario() -> None:
        async with rig() as r:
            alice, bob = FakeCaller(), FakeCaller()
            a = r.call(alice, "a-1", progress_token="tok")
            b = r.call(bob, "b-1", progress_token="tok")  # two sessions, one token: no clash upstream
            tokens = [m["params"]["_meta"]["progressToken"] for m in r.transport.calls()]
            assert tokens == [a.upstream_id, b.upstream_id]
            for token, progress in ((b.upstream_id, 1), (a.upstream_id, 2), (999, 3)):
                r.link.receive(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": progress},
                    }
                )
            assert alice.lines == [
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": "tok", "progress": 2},
                }
            ]
            assert [line["params"]["progress"] for line in bob.lines] == [1]  # 999 belongs to nobody

    run(scenario)


def test_past_max_concurrency_a_call_waits_and_is_sent_when_a_slot_frees():
    async def scenario() -> None:
        async with rig(max_concurrency=1) as r:
            caller = FakeCaller()
            first = r.call(caller, 1)
            second = r.call(caller, 2)
            assert [m["id"] for m in r.transport.calls()] == [first.upstream_id]
            assert (r.link.in_flight, r.link.waiting) == (1, 1)
            r.answer(first.upstream_id)
            assert [m["id"] for m in r.transport.calls()] == [first.upstream_id, second.upstream_id]
            assert (r.link.in_flight, r.link.waiting) == (1, 0)
            r.answer(second.upstream_id)
            assert caller.ended == [(1, "ok", None), (2, "ok", None)]

    run(scenario)


def test_at_the_deadline_the_upstream_gets_cancelled_with_its_own_id_and_the_caller_gets_timeout():
    async def scenario() -> None:
        async with rig(timeout=0.05) as r:
            caller = FakeCaller()
            call = r.call(caller, 7, "hang")
            await await_until(lambda: caller.ended, timeout=WAIT, message="the deadline")
            assert caller.ended == [(7, "timeout", "timeout")]
            [line] = caller.lines
            assert line["id"] == 7 and reason_of(line) == "timeout"
            assert r.transport.sent[-1] == {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": call.upstream_id, "reason": "timeout"},
            }
            assert r.breaker_state.current.failures == 1  # counted before the caller heard
            r.answer(call.upstream_id, "too late")  # a late reply goes nowhere
            assert len(caller.lines) == 1 and r.link.in_flight == 0

    run(scenario)


def test_calls_share_one_deadline_timer_and_each_times_out_at_its_own_deadline():
    async def scenario() -> None:
        async with rig(timeout=0.1) as r:
            loop = asyncio.get_running_loop()
            caller, ended_at = FakeCaller(), {}
            original = caller.call_ended

            def call_ended(call: CallInflight, outcome: str, reason: str | None, size: int) -> None:
                ended_at[call.downstream_id] = loop.time()
                original(call, outcome, reason, size)

            caller.call_ended = call_ended  # type: ignore[method-assign]
            first_sent = loop.time()
            r.call(caller, 1, "hang")
            answered = r.call(caller, 2)
            r.answer(answered.upstream_id)  # ends before its deadline: the timer skips it
            await await_until(lambda: loop.time() >= first_sent + 0.05, timeout=WAIT, message="50 ms")
            third_sent = loop.time()
            r.call(caller, 3, "hang")
            await await_until(lambda: len(caller.ended) == 3, timeout=WAIT, message="both deadlines")
            assert caller.ended == [(2, "ok", None), (1, "timeout", "timeout"), (3, "timeout", "timeout")]
            assert (
                ended_at[1] >= first_sent + 0.1 - 0.001
            )  # the loop fires a timer within its clock's resolution
            assert ended_at[3] >= third_sent + 0.1 - 0.001
            assert r.link.in_flight == 0

    run(scenario)


def test_detach_fails_calls_in_flight_and_waiting_with_upstream_error():
    async def scenario() -> None:
        async with rig(max_concurrency=1) as r:
            caller = FakeCaller()
            r.call(caller, 1)
            r.call(caller, 2)  # waiting for the one slot
            assert r.link.available
            assert r.link.detach() is True
            assert not r.link.available
            await await_until(lambda: len(caller.ended) == 2, timeout=WAIT, message="both calls ended")
            assert sorted(caller.ended) == [
                (1, "upstream_error", "upstream_error"),
                (2, "upstream_error", "upstream_error"),
            ]
            assert {reason_of(line) for line in caller.lines} == {"upstream_error"}
            assert (r.link.in_flight, r.link.waiting) == (0, 0)
            assert r.link.detach() is False  # nothing attached any more
            late = FakeCaller()
            r.call(late, 3)
            assert late.ended == [(3, "upstream_error", "upstream_unavailable")]  # its outcome, its reason

    run(scenario)


def test_after_breaker_failures_the_next_call_is_refused_unsent_and_after_the_cooldown_one_probe_closes_it():
    async def scenario() -> None:
        async with rig(breaker_failures=2, breaker_cooldown=30.0) as r:
            caller = FakeCaller()
            for i in (1, 2):  # two transport failures: the connection drops mid-call
                r.call(caller, i)
                r.link.detach()
                r.link.attach(r.transport)
                await await_until(lambda n=i: len(caller.ended) == n, timeout=WAIT, message=f"failure {i}")
            assert r.breaker_state.current.status == "open"
            assert [type(e) for e in r.published] == [CircuitOpened]
            sent = len(r.transport.calls())

            r.call(caller, 3)
            assert caller.ended[-1] == (3, "circuit_open", "circuit_open")
            assert len(r.transport.calls()) == sent  # never reached the upstream

            r.clock.now += 30.0  # the cooldown passes
            probe = r.call(caller, 4)
            other = r.call(caller, 5)  # while the probe is out
            await await_until(lambda: len(r.transport.calls()) > sent, timeout=WAIT, message="the probe sent")
            await await_until(
                lambda: caller.ended[-1][0] == 5, timeout=WAIT, message="the other call refused"
            )
            assert caller.ended[-1] == (5, "circuit_open", "circuit_open")
            assert [m["id"] for m in r.transport.calls()[sent:]] == [probe.upstream_id]  # exactly one probe
            assert probe.probe is True and other.probe is False

            r.answer(probe.upstream_id, "probe ok")
            await await_until(lambda: caller.ended[-1][0] == 4, timeout=WAIT, message="the probe answered")
            assert caller.ended[-1] == (4, "ok", None)
            assert r.breaker_state.current == CLOSED
            assert [type(e) for e in r.published] == [CircuitOpened, CircuitClosed]
            after = r.call(caller, 6)
            assert r.transport.calls()[-1]["id"] == after.upstream_id  # closed: forwarded at once

    run(scenario)


def test_the_upstreams_own_requests_are_answered_by_the_link():
    async def scenario() -> None:
        async with rig() as r:
            changed: list[bool] = []
            r.link.on_list_changed = lambda: changed.append(True)
            r.link.receive({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            r.link.receive({"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": {}})
            r.link.receive({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            ping, sampling = r.transport.sent
            assert ping == {"jsonrpc": "2.0", "id": "p", "result": {}}
            assert sampling["id"] == "s" and sampling["error"]["code"] == -32601
            assert changed == [True]

    run(scenario)


def test_an_internal_request_resolves_with_the_upstreams_result_or_raises_on_its_error():
    async def scenario() -> None:
        async with rig() as r:
            listing = asyncio.create_task(r.link.request("tools/list", {}, timeout=WAIT))
            await await_until(lambda: r.transport.sent, timeout=WAIT, message="tools/list sent")
            uid = r.transport.sent[-1]["id"]
            r.link.receive({"jsonrpc": "2.0", "id": uid, "result": {"tools": []}})
            assert await listing == {"tools": []}
            failing = asyncio.create_task(r.link.request("initialize", {}, timeout=WAIT))
            await await_until(lambda: len(r.transport.sent) == 2, timeout=WAIT, message="initialize sent")
            r.link.receive(
                {"jsonrpc": "2.0", "id": r.transport.sent[-1]["id"], "error": {"code": -1, "message": "no"}}
            )
            try:
                await failing
            except RuntimeError as exc:
                assert "initialize failed" in str(exc)
            else:
                raise AssertionError("an error reply must raise")

    run(scenario)


class EliciteeCaller(FakeCaller):
    """A caller that takes relayed requests (and answers each with its own name)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.relayed: list[tuple[Any, dict[str, Any]]] = []

    def relay_request(self, call: CallInflight, message: dict[str, Any], answer: Callable[..., None]) -> None:
        self.relayed.append((call.downstream_id, message))
        answer({"result": {"action": "accept", "content": {"name": self.name}}})


def test_an_elicitation_carried_on_a_calls_stream_goes_to_that_call_however_many_are_in_flight():
    async def scenario() -> None:
        async with rig() as r:
            a, b = EliciteeCaller("a"), EliciteeCaller("b")
            r.call(a, 1)
            second = r.call(b, 1)
            await await_until(lambda: len(r.transport.calls()) == 2, timeout=WAIT, message="both sent")
            ask = {"jsonrpc": "2.0", "id": 70, "method": "elicitation/create", "params": {"message": "?"}}
            r.link.receive(dict(ask), related=second.upstream_id)
            assert a.relayed == [] and b.relayed == [(1, ask)]
            assert r.transport.sent[-1] == {
                "id": 70,
                "jsonrpc": "2.0",
                "result": {"action": "accept", "content": {"name": "b"}},
            }
            r.link.receive({**ask, "id": 71})  # no stream says whose: two calls in flight, refused
            assert r.transport.sent[-1]["error"]["code"] == -32600
            assert "2 calls are in flight" in r.transport.sent[-1]["error"]["message"]

    run(scenario)


def test_deadlines_find_their_loop_once_not_once_per_call(monkeypatch):
    from harness.gateway.upstream import admission

    looked: list[int] = []
    original = asyncio.get_running_loop

    def counting() -> asyncio.AbstractEventLoop:
        looked.append(1)  # CPython 3.11's lookup makes a getpid() system call each time
        return original()

    async def scenario() -> None:
        deadlines = admission.Deadlines(lambda uid: None)
        with monkeypatch.context() as patched:
            patched.setattr(admission.asyncio, "get_running_loop", counting)
            for uid in range(50):
                deadlines.start(uid, 10.0)
        deadlines.clear()

    asyncio.run(scenario())
    assert len(looked) == 1
