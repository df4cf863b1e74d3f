"""The loopback endpoint's HTTP/1.1 reading: what a careless or hostile client sends is refused with
the right status, never an exception out of the connection."""

from __future__ import annotations

import asyncio

import pytest

from harness.gateway.downstream.http_lines import ClientGone, ClientReader, Lines
from harness.gateway.downstream.http_wire import (
    MAX_BODY,
    MAX_HEAD,
    HttpRefusal,
    Request,
    read_request,
)


def _read(data: bytes):
    async def go():
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        reader.feed_data(data)
        reader.feed_eof()
        return await read_request(reader, asyncio.current_task())

    return asyncio.run(go())


def test_a_request_with_a_body_is_read_with_lowercase_headers():
    request = _read(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\nX-A: b\r\n\r\n{}")
    assert (request.method, request.path, request.body) == ("POST", "/mcp", b"{}")
    assert request.headers["host"] == "127.0.0.1:9" and request.headers["x-a"] == "b"


def test_a_clean_end_of_the_connection_is_none():
    assert _read(b"") is None


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"POST /mcp HTTP/1.1\r\nHost: h\r\n\r\n", 411),
        (b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: " + str(MAX_BODY + 1).encode() + b"\r\n\r\n", 413),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        ("POST /mcp HTTP/1.1\r\nContent-Length: \u00b2\r\n\r\n".encode("latin-1"), 400),  # "²".isdigit()
        ("POST /mcp HTTP/1.1\r\nContent-Length: \u0663\r\n\r\n".encode(), 400),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: " + b"0" * 5000 + b"1\r\n\r\n", 413),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 0\r\n\r\n{}", 400),
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /mcp HTTP/2\r\n\r\n", 400),
        (b"GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET /mcp HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"GET /mcp HTTP/1.1\r\nX: " + b"y" * (MAX_HEAD + 10) + b"\r\n\r\n", 431),
        (b"GET /mcp HTTP/1.1\r\nHost: a", 400),
    ],
)
def test_a_bad_request_is_refused_with_its_status(data, status):
    with pytest.raises(HttpRefusal) as refused:
        _read(data)
    assert refused.value.status == status


def test_a_request_head_that_stops_short_is_refused_408_after_the_head_deadline():
    async def go():
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        reader.feed_data(b"POST /mcp HTTP/1.1\r\nHost: h\r\n")
        return await read_request(reader, asyncio.current_task(), head_timeout=0.05)

    with pytest.raises(HttpRefusal) as refused:
        asyncio.run(go())
    assert refused.value.status == 408


class _CountingLoop(asyncio.SelectorEventLoop):
    """Counts the timers set on it."""

    timers = 0

    def call_at(self, when, callback, *args, context=None):
        self.timers += 1
        return super().call_at(when, callback, *args, context=context)


def test_reading_a_request_on_a_kept_alive_connection_sets_one_timer_for_its_deadlines():
    """Its first byte, head and body arrive one after the other (each a deadline of its own)."""

    async def scenario(loop):
        reader = ClientReader(MAX_HEAD, loop)
        loop.call_soon(reader.feed_data, b"P")
        loop.call_later(0.01, reader.feed_data, b"OST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n")
        loop.call_later(0.02, reader.feed_data, b"{}")
        before = loop.timers
        request = await read_request(reader, asyncio.current_task(), 5.0, idle_timeout=120.0)
        return request, loop.timers - before

    loop = _CountingLoop()
    try:
        request, timers = loop.run_until_complete(asyncio.wait_for(scenario(loop), 10))
    finally:
        loop.close()
    assert request is not None and request.body == b"{}"
    assert timers == 1


@pytest.mark.parametrize(
    ("data", "idle", "ends"),
    [
        (b"", 0.05, TimeoutError),  # a kept-alive connection left idle: closed without an answer
        (b"POST /mcp HTTP/1.1\r\nHost: h\r\n", 10.0, HttpRefusal),  # the head's 5 s pass
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n", 10.0, HttpRefusal),  # the body's 30 s
    ],
)
def test_each_part_of_a_request_has_its_own_deadline(data, idle, ends, monkeypatch):
    monkeypatch.setattr("harness.gateway.downstream.http_wire.BODY_TIMEOUT_S", 0.1)

    async def scenario():
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        reader.feed_data(data)
        return await read_request(reader, asyncio.current_task(), 0.1, idle_timeout=idle)

    with pytest.raises(ends) as ended:
        asyncio.run(asyncio.wait_for(scenario(), 10))
    if ends is HttpRefusal:
        assert ended.value.status == 408
        assert "0.1 s" in ended.value.reason


def test_a_cancelled_read_stays_cancelled_and_is_not_taken_for_a_deadline():
    async def scenario():
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        reading = asyncio.ensure_future(read_request_in_task(reader))
        await asyncio.sleep(0.01)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading

    async def read_request_in_task(reader):
        return await read_request(reader, asyncio.current_task(), 0.01, idle_timeout=5.0)

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_request_sent_while_an_answer_is_awaited_is_read_whole_after_it():
    """Awaiting an answer reads nothing from the connection: a request the client sends meanwhile
    (pipelined) is not the client going away, and is read whole once the answer is out."""

    async def scenario() -> tuple[list[bytes | None], Request | None]:
        loop = asyncio.get_running_loop()
        reader, lines = ClientReader(MAX_HEAD, loop), Lines()
        loop.call_later(0.01, reader.feed_data, b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
        loop.call_later(0.03, lines.put, b'{"answer":1}\n')
        await lines.wait(reader)
        return lines.ready(), await read_request(reader, asyncio.current_task(), 5.0, idle_timeout=5.0)

    answer, request = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert answer == [b'{"answer":1}\n'] and request is not None and request.body == b"{}"


def test_a_client_that_goes_away_wakes_the_answer_it_waits_for_after_what_was_already_there():
    async def scenario() -> tuple[list[bytes | None], type[BaseException] | None]:
        loop = asyncio.get_running_loop()
        reader, lines = ClientReader(MAX_HEAD, loop), Lines()
        lines.put(b"progress\n")
        await lines.wait(reader)
        got = lines.ready()
        loop.call_later(0.01, reader.set_exception, ConnectionResetError())
        try:
            await lines.wait(reader)
        except ClientGone as gone:
            return got, type(gone)
        return got, None

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) == ([b"progress\n"], ClientGone)
