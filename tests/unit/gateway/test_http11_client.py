"""The upstream's hand-written HTTP/1.1 client against a real socket: a scripted server on 127.0.0.1
answers each request with given bytes (split into pieces where a test says so), and records what it
received and how many connections it accepted."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from harness.gateway.upstream.http11 import Http11Client, HttpError
from harness.gateway.upstream.http_proxied import ProxiedClient, http_client
from harness.gateway.upstream.sse import SseParser
from support import await_until

WAIT = 10.0
Answer = list[bytes]
"""One response, as the pieces the server writes (each flushed, a short pause between them)."""


class Scripted:
    """A server that answers the n-th request with ``answers[n]``; ``None`` closes the connection
    without answering, and an answer that ends with ``CLOSE`` closes it after writing."""

    def __init__(self, answers: list[Answer | None]) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Scripted:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls())
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def tls(self) -> ssl.SSLContext | None:
        return None

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line[15:])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                self.requests.append(head + await reader.readexactly(length))
                answer = self.answers[len(self.requests) - 1]
                if answer is None:
                    break
                for piece in answer:
                    if piece is CLOSE:
                        return
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.005)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


CLOSE = b"<close>"
T = TypeVar("T")


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), WAIT)

    return asyncio.run(bounded())


def json_answer(body: bytes, status: str = "200 OK") -> Answer:
    return [
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    ]


def chunked(*chunks: bytes, content_type: str = "application/json") -> Answer:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    return [head, *(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks), b"0\r\n\r\n"]


async def exchange(client: Http11Client, body: bytes = b"{}") -> tuple[int, bytes]:
    async with client.stream("POST", {"Content-Type": "application/json"}, body) as response:
        return response.status, await response.read()


def test_a_chunked_body_arrives_whole_however_the_server_splits_it() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"x" * 70000 + b'"}}'
    answer = chunked(body[:10], body[10:40000], body[40000:])
    bytewise = [b for piece in answer for b in (piece[:7], piece[7:9], piece[9:])]

    async def scenario() -> list[tuple[int, bytes]]:
        async with Scripted([answer, bytewise]) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            got = [await exchange(client), await exchange(client)]
            await client.aclose()
            return got

    assert run(scenario) == [(200, body), (200, body)]


def test_a_kept_alive_connection_serves_the_next_request_and_an_unread_body_closes_its_own() -> None:
    async def scenario() -> tuple[int, int]:
        answers: list[Answer | None] = [json_answer(b"%d" % n) for n in range(1, 5)]
        async with Scripted(answers) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            await exchange(client)
            await exchange(client)
            reused = server.connections
            async with client.stream("POST", {}, b"{}") as response:
                assert response.status == 200  # its body is left unread: the connection cannot serve again
            assert await exchange(client) == (200, b"4")
            await client.aclose()
            return reused, server.connections

    assert run(scenario) == (1, 2)


def test_a_request_goes_out_when_it_is_made_if_a_kept_alive_connection_is_idle() -> None:
    """Written in the caller's step (no loop turn before the upstream sees it); one never entered
    gives its connection up, and the next request opens another."""

    async def scenario() -> tuple[int, bytes, int]:
        answers: list[Answer | None] = [json_answer(b"%d" % n) for n in range(1, 5)]
        async with Scripted(answers) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            await exchange(client)
            pending = client.stream("POST", {}, b'{"early":1}')
            await await_until(lambda: len(server.requests) == 2, 5.0, message="the request was not sent")
            async with pending as response:
                early = response.status, await response.read()
            abandoned = client.stream("POST", {}, b"{}")
            await await_until(lambda: len(server.requests) == 3, 5.0, message="the request was not sent")
            abandoned.abandon()
            assert await exchange(client) == (200, b"4")
            await client.aclose()
            return *early, server.connections

    assert run(scenario) == (200, b"2", 2)


@pytest.mark.parametrize("status", ["400 Bad Request", "404 Not Found", "500 Internal Server Error"])
def test_an_error_status_comes_back_with_its_body_and_the_connection_stays_usable(status: str) -> None:
    async def scenario() -> tuple[tuple[int, bytes], tuple[int, bytes], int]:
        async with Scripted([json_answer(b'{"error":"no"}', status), json_answer(b"ok")]) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            got = await exchange(client), await exchange(client)
            await client.aclose()
            return got[0], got[1], server.connections

    assert run(scenario) == ((int(status[:3]), b'{"error":"no"}'), (200, b"ok"), 1)


@pytest.mark.parametrize(
    "answer",
    [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 40, CLOSE],
        [*chunked(b"x" * 40)[:2], b"40\r\nxx", CLOSE],
        [b"HTTP/1.1 200 OK\r\nContent-Le", CLOSE],
        None,
    ],
    ids=["content-length", "chunked", "head", "no-answer"],
)
def test_a_server_that_closes_mid_response_is_a_clear_error(answer: Answer | None) -> None:
    async def scenario() -> str:
        async with Scripted([answer]) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            with pytest.raises(HttpError) as caught:
                await exchange(client)
            await client.aclose()
            return str(caught.value)

    assert run(scenario).startswith("the upstream closed the connection")


def test_a_body_that_ends_with_the_connection_is_read_to_its_end() -> None:
    async def scenario() -> tuple[int, bytes]:
        async with Scripted([[b"HTTP/1.0 200 OK\r\n\r\n", b"part one, ", b"part two", CLOSE]]) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            got = await exchange(client)
            await client.aclose()
            return got

    assert run(scenario) == (200, b"part one, part two")


def test_sse_events_are_read_from_a_stream_split_anywhere_with_crlf_lf_or_cr_line_ends() -> None:
    stream = (
        b'\xef\xbb\xbf: a comment\r\nevent: message\r\nid: 1\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'
        b"data: caf\xc3\xa9\n\nevent: ping\ndata: x\n\ndata: cr\r\rdata:no-space\r\n\r\nid: 9\n\n"
    )
    expected = [
        ("message", '{"a":\n1}'),
        ("message", "café"),
        ("ping", "x"),
        ("message", "cr"),
        ("message", "no-space"),
    ]
    for size in (1, 2, 3, 5, 7, len(stream)):
        parser = SseParser()
        events = [e for i in range(0, len(stream), size) for e in parser.feed(stream[i : i + size])]
        assert events == expected, size

    async def scenario() -> list[tuple[str, str]]:
        pieces = [stream[i : i + 9] for i in range(0, len(stream), 9)]
        async with Scripted([chunked(*pieces, content_type="text/event-stream")]) as server:
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp", {}, 5.0)
            parser = SseParser()
            async with client.stream("GET", {"Accept": "text/event-stream"}) as response:
                got = [e async for chunk in response.chunks() for e in parser.feed(chunk)]
            await client.aclose()
            return got

    assert run(scenario) == expected


def test_requests_carry_the_configured_headers_and_never_follow_a_redirect() -> None:
    redirect = [
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n"
    ]

    async def scenario() -> tuple[int, bytes]:
        async with Scripted([redirect]) as server:
            configured = {"Authorization": "Bearer s3cret", "Accept": "overridden"}
            client = Http11Client(f"http://127.0.0.1:{server.port}/mcp?x=1", configured, 5.0)
            status, _ = await exchange(client)
            await client.aclose()
            return status, server.requests[0]

    status, request = run(scenario)
    head = request.split(b"\r\n")
    assert status == 307 and head[0] == b"POST /mcp?x=1 HTTP/1.1"
    assert b"Authorization: Bearer s3cret" in head and b"Content-Type: application/json" in head
    assert any(line.startswith(b"Host: 127.0.0.1:") for line in head) and b"Content-Length: 2" in head
    assert b"Accept: overridden" in head


@pytest.mark.parametrize(
    "headers", [{"X-Evil": "a\r\nInjected: yes"}, {"Bad Name": "x"}, {"X-Wide": "\u2603"}]
)
def test_a_header_that_would_break_the_request_head_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(HttpError, match="refusing to send"):
        Http11Client("http://127.0.0.1:1/mcp", headers, 5.0)


def test_a_connection_refused_is_an_os_error_not_a_hang() -> None:
    async def scenario() -> None:
        async with Scripted([]) as server:
            port = server.port
        client = Http11Client(f"http://127.0.0.1:{port}/mcp", {}, 5.0)
        with pytest.raises(OSError):
            await exchange(client)

    run(scenario)


class _Tls(Scripted):
    def __init__(self, answers: list[Answer | None], cert: Path, key: Path) -> None:
        super().__init__(answers)
        self._cert, self._key = cert, key

    def tls(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self._cert, self._key)
        return context


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_verifies_the_certificate_and_trusts_ssl_cert_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )

    async def scenario() -> tuple[str, tuple[int, bytes]]:
        async with _Tls([json_answer(b"secure")], cert, key) as server:
            url = f"https://127.0.0.1:{server.port}/mcp"
            with pytest.raises(HttpError) as untrusted:
                await exchange(Http11Client(url, {}, 5.0))
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            client = Http11Client(url, {}, 5.0)
            got = await exchange(client)
            await client.aclose()
            return str(untrusted.value), got

    refused, trusted = run(scenario)
    assert "CERTIFICATE_VERIFY_FAILED" in refused and trusted == (200, b"secure")


def test_a_proxy_named_in_the_environment_gets_the_request_through_httpx2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> tuple[type, tuple[int, bytes], bytes]:
        async with Scripted([json_answer(b"via proxy")]) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            monkeypatch.delenv("NO_PROXY", raising=False)
            monkeypatch.delenv("no_proxy", raising=False)
            client = http_client("http://upstream.invalid/mcp", {"Authorization": "Bearer t"}, 5.0)
            async with client.stream("POST", {"Content-Type": "application/json"}, b"{}") as response:
                got = response.status, await response.read()
            await client.aclose()
            return type(client), got, proxy.requests[0]

    kind, got, request = run(scenario)
    assert kind is ProxiedClient and got == (200, b"via proxy")
    assert request.startswith(b"POST http://upstream.invalid/mcp HTTP/1.1\r\n") and b"Bearer t" in request
