"""The HTTP/1.1 framing of one ``/mcp`` call, hand-written (``gateway/downstream/http_wire.py``)
against ``h11`` (the sans-I/O parser the SDK's dependencies already install): a keep-alive
connection's request head and body parsed, and a JSON response framed, in-process, no sockets.

Rounds alternate the order; printed: per-engine median µs per request/response pair, and the median
of the same-round ratios h11/hand. ``python bench/http_framing.py --rounds 7 -n 20000``
"""

from __future__ import annotations

import argparse
import statistics
import time

import h11

from harness.gateway.downstream.http_wire import parse_head

BODY = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__echo",'
    b'"arguments":{"text":"hello"},"_meta":{"progressToken":null}}}'
)
REQUEST = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nAccept: application/json, text/event-stream\r\n"
    b"Content-Type: application/json\r\nAuthorization: Bearer " + b"t" * 43 + b"\r\n"
    b"Mcp-Session-Id: 0123456789abcdef0123456789abcdef\r\nMcp-Protocol-Version: 2025-11-25\r\n"
    b"User-Agent: python-httpx/0.28\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)
ANSWER = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}'
HEADERS = {"Content-Type": "application/json", "Mcp-Session-Id": "0123456789abcdef0123456789abcdef"}


def hand(n: int) -> float:
    """µs per call: the endpoint's own framing (its head parse and response head)."""
    start = time.perf_counter()
    for _ in range(n):
        split = REQUEST.index(b"\r\n\r\n") + 4
        _method, _target, headers = parse_head(REQUEST[:split])
        body = REQUEST[split : split + int(headers["content-length"])]
        assert body
        head = [
            "HTTP/1.1 200 OK",
            f"Content-Length: {len(ANSWER)}",
            *(f"{k}: {v}" for k, v in HEADERS.items()),
        ]
        out = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + ANSWER
        assert out
    return (time.perf_counter() - start) / n * 1e6


def with_h11(n: int) -> float:
    """µs per call: the same through one h11 connection kept alive across calls."""
    conn = h11.Connection(h11.SERVER)
    headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]
    start = time.perf_counter()
    for _ in range(n):
        conn.receive_data(REQUEST)
        request = conn.next_event()
        assert isinstance(request, h11.Request)
        body = b""
        while not isinstance(event := conn.next_event(), h11.EndOfMessage):
            assert isinstance(event, h11.Data)
            body += event.data
        out = conn.send(
            h11.Response(status_code=200, headers=[*headers, (b"Content-Length", str(len(ANSWER)).encode())])
        )
        out = (
            (out or b"") + (conn.send(h11.Data(data=ANSWER)) or b"") + (conn.send(h11.EndOfMessage()) or b"")
        )
        assert out and body
        conn.start_next_cycle()
    return (time.perf_counter() - start) / n * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("-n", type=int, default=20_000)
    a = ap.parse_args()
    hand(1000), with_h11(1000)  # warm
    figures: dict[str, list[float]] = {"hand": [], "h11": []}
    ratios = []
    for r in range(a.rounds):
        order = (hand, with_h11) if r % 2 == 0 else (with_h11, hand)
        got = {fn.__name__: fn(a.n) for fn in order}
        figures["hand"].append(got["hand"])
        figures["h11"].append(got["with_h11"])
        ratios.append(got["with_h11"] / got["hand"])
        print(f"round {r + 1}: hand {got['hand']:.1f} µs  h11 {got['with_h11']:.1f} µs")
    hand_us, h11_us = statistics.median(figures["hand"]), statistics.median(figures["h11"])
    print(f"median per call: hand {hand_us:.1f} µs, h11 {h11_us:.1f} µs (+{h11_us - hand_us:.1f} µs)")
    print(f"h11 / hand, median of same-round ratios: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
