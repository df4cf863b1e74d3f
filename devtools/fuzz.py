"""Hostile MCP traffic for a real daemon: what a careless or malicious agent writes on its session.

:func:`hostile_messages` yields seeded messages — well-formed requests with every field mutated,
raw garbage (invalid UTF-8, truncated JSON, ``NaN``, deep nesting, long lines), batches, stray
responses and notifications — each saying what the daemon owes it: an answer (a well-formed request
with an integer or string id) and, for a ``tools/call``, exactly one call-log row.

:class:`FuzzSession` writes them to the daemon's socket (the bytes ``harness mcp`` relays), in
random chunks, reading answers on a thread; :func:`run_fuzz` drives one or more such sessions
against a running daemon while a sibling session calls a tool through a real ``harness mcp``
bridge, probes for hangs with ``ping`` and returns the counts a caller checks
(bench/fuzz.py, tests/hostile/test_fuzz.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from devtools.children import end_child

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHODS = (
    "tools/call",
    "tools/call",
    "tools/call",
    "tools/list",
    "ping",
    "initialize",
    "resources/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "tools/Call",
    "",
    "rpc.discover",
    "$/cancelRequest",
    "../../etc/passwd",
    "tools/call\x00",
    "🔧/call",
)
NOTIFICATIONS = (
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/unknown",
)


@dataclass(frozen=True)
class Hostile:
    """One message as written, and what the daemon owes it."""

    data: bytes
    answer_ids: tuple[int | str, ...] = ()
    """Ids of well-formed requests in it: each must be answered."""
    call_ids: tuple[int | str, ...] = ()
    """Those of them that are ``tools/call``: each must leave exactly one call-log row."""


class _Ids:
    """Unique ids for requests the daemon must answer (never reused while in flight)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def next(self) -> int | str:
        self.n += 1
        kind = self.rng.random()
        if kind < 0.5:
            return self.n
        if kind < 0.6:
            return -self.n
        if kind < 0.7:
            return self.n + 2**53
        if kind < 0.85:
            return f"f{self.n}"
        return f"ïd-{self.n}-\u202e\u0000"


def _junk(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value (deep, wide, odd strings, big numbers)."""
    kind = rng.randrange(9 if depth < 6 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice((0, -1, 2**63, -(2**64), 10**300, 1e308, -0.0, 3.5))
    if kind == 3:
        return "".join(
            rng.choice("aZ0 _-/\\\"'\n\t\u00e9\u4e2d\U0001f600\u202e\ud7ff") for _ in range(rng.randrange(40))
        )
    if kind == 4:
        return "x" * rng.choice((0, 1, 100, 5000, 70000))
    if kind in (5, 6):
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_key(rng): _junk(rng, depth + 1) for _ in range(rng.randrange(5))}


def _key(rng: random.Random) -> str:
    return rng.choice(
        ("text", "", "a" * 300, "__proto__", "constructor", "ms", "name", "\u0000", "password", "k")
    )


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


class HostileTraffic:
    """The generator behind :func:`hostile_messages` (one per session: ids are per session)."""

    def __init__(self, rng: random.Random, tool_names: tuple[str, ...], version: str) -> None:
        self.rng = rng
        self.tools = tool_names
        self.version = version
        self.ids = _Ids(rng)

    def name(self) -> Any:
        r = self.rng.random()
        if r < 0.55:
            return self.rng.choice(self.tools)
        if r < 0.85:
            return self.rng.choice(
                (
                    "nope__x",
                    "up__",
                    "__echo",
                    "search_tools",
                    "call_tool",
                    "a" * 5000,
                    "up__echo\n",
                    "UP__ECHO",
                    "",
                )
            )
        return _junk(self.rng)

    def arguments(self) -> Any:
        r = self.rng.random()
        if r < 0.6:
            return {"text": self.rng.choice(("hi", "é" * 100, "x" * 3000, "password=hunter2"))}
        if r < 0.7:
            return None
        return _junk(self.rng)

    def request(self) -> tuple[dict[str, Any], int | str, bool]:
        """A well-formed request (any method) with fuzzed params: it must be answered."""
        method = self.rng.choice(METHODS)
        rid = self.ids.next()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if method == "tools/call":
            params: Any = {"name": self.name(), "arguments": self.arguments()}
            r = self.rng.random()
            if r < 0.1:
                params = _junk(self.rng)
            elif r < 0.2:
                params["_meta"] = {"progressToken": _junk(self.rng)}
            elif r < 0.25:
                del params["name"]
        elif method == "initialize":
            params = {"protocolVersion": self.rng.choice((*VERSIONS, "1999-01-01", 7)), "capabilities": {}}
        else:
            params = _junk(self.rng) if self.rng.random() < 0.5 else {}
        if self.rng.random() < 0.9:
            message["params"] = params
        return message, rid, method == "tools/call"

    def malformed(self) -> bytes:
        """Bytes that are not one well-formed request (nothing is owed but staying up)."""
        rng = self.rng
        choice = rng.randrange(16)
        good, _rid, _call = self.request()
        text = json.dumps(good)
        if choice == 0:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        if choice == 1:
            return text[: rng.randrange(1, max(2, len(text)))].encode()
        if choice == 2:
            return (
                b'{"jsonrpc":"2.0","id":'
                + rng.choice((b"NaN", b"Infinity", b"-Infinity"))
                + b',"method":"ping"}'
            )
        if choice == 3:
            return (
                b'{"jsonrpc":"2.0","id":"nan-' + str(self.ids.next()).encode() + b'","method":"tools/call",'
                b'"params":{"name":"up__echo","arguments":{"n":NaN}}}'
            )
        if choice == 4:
            if rng.random() < 0.5:
                return _deep(rng.choice((100, 129, 1000, 100_000))).encode()
            call = {"jsonrpc": "2.0", "id": f"deep-{self.ids.next()}", "method": "tools/call"}
            text = json.dumps({**call, "params": {"name": "up__echo", "arguments": {"text": "x"}}})
            return text.replace('"x"', _deep(rng.choice((120, 200, 990))), 1).encode()
        if choice == 5:
            return json.dumps({"jsonrpc": "2.0", "method": _junk(rng), "id": _junk(rng)}).encode()
        if choice == 6:
            return json.dumps({"jsonrpc": "1.0", "id": "v1", "method": "ping"}).encode()
        if choice == 7:
            return json.dumps([_junk(rng) for _ in range(rng.randrange(4))]).encode()
        if choice == 8:
            return json.dumps({"jsonrpc": "2.0", "id": _junk(rng), "result": _junk(rng)}).encode()
        if choice == 9:
            return json.dumps({"jsonrpc": "2.0", "id": "x", "error": {"code": "bad"}}).encode()
        if choice == 10:
            notification = {"jsonrpc": "2.0", "method": rng.choice(NOTIFICATIONS), "params": _junk(rng)}
            if (
                notification["method"] == "notifications/cancelled"
            ):  # never one of ours: those are owed answers
                notification["params"] = {
                    "requestId": rng.choice(("not-ours", -0.5, None, [1])),
                    "reason": "x",
                }
            return json.dumps(notification).encode()
        if choice == 11:
            return b"\xef\xbb\xbf" + text.encode()  # a byte-order mark
        if choice == 12:
            return text.encode().replace(b"2.0", b"2.0\xff", 1)
        if choice == 13:
            return b" " * rng.randrange(10) + b"\t\r"
        if choice == 14 and rng.random() < 0.05:
            return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * 1_000_000}).encode()[
                :-1
            ]
        return json.dumps(_junk(rng)).encode()

    def batch(self) -> Hostile:
        """A JSON array of requests: answered member by member only in 2025-03-26."""
        members = []
        ids: list[int | str] = []
        calls: list[int | str] = []
        for _ in range(self.rng.randrange(1, 6)):
            message, rid, is_call = self.request()
            members.append(message)
            ids.append(rid)
            if is_call:
                calls.append(rid)
        data = json.dumps(members).encode() + b"\n"
        if self.version == "2025-03-26":
            return Hostile(data, tuple(ids), tuple(calls))
        return Hostile(data)

    def __iter__(self) -> Iterator[Hostile]:
        while True:
            r = self.rng.random()
            if r < 0.5:
                message, rid, is_call = self.request()
                yield Hostile(json.dumps(message).encode() + b"\n", (rid,), (rid,) if is_call else ())
            elif r < 0.93:
                line = self.malformed().replace(b"\n", b" ")
                refused = _refused_call(line)
                ids = () if refused is None else (refused,)
                yield Hostile(line + b"\n", ids, ids)
            else:
                yield self.batch()


def _refused_call(line: bytes) -> int | str | None:
    """The id of a ``tools/call`` in a line the gateway refuses but can still read leniently (NaN,
    nesting too deep): the gateway answers it and records it as a denied call (docs/call-log.md)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    rid = message.get("id")
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def hostile_messages(seed: int, tool_names: tuple[str, ...], version: str) -> Iterator[Hostile]:
    """An endless seeded stream of hostile messages for a session that negotiated ``version``."""
    return iter(HostileTraffic(random.Random(seed), tool_names, version))


def _answers(line: bytes) -> list[Any]:
    """The ids answered by one line from the daemon (a batch answer holds several); a refusal of
    the connection (``{"harness_error": ...}``) as its reason."""
    try:
        message = json.loads(line)
    except ValueError:
        return [_NOT_JSON]
    if isinstance(message, dict) and "harness_error" in message:
        return [_Refused(str(message["harness_error"]))]
    items = message if isinstance(message, list) else [message]
    return [m.get("id") for m in items if isinstance(m, dict) and ("result" in m or "error" in m)]


_NOT_JSON = object()


@dataclass(frozen=True)
class _Refused:
    reason: str


class FuzzSession:
    """One hostile session on the daemon's socket, presenting a harness's token."""

    def __init__(self, socket_path: str, token: str, rng: random.Random) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(socket_path)
        self.rng = rng
        preamble = {"harness_bridge": 1, "kind": "mcp", "token": token}
        self.sock.sendall(json.dumps(preamble).encode() + b"\n")
        self.answered: set[str] = set()
        """Ids answered so far (JSON-encoded)."""
        self.pending: set[str] = set()
        """Owed answers not received yet (JSON-encoded ids)."""
        self.not_json = 0
        self.refused = ""
        """The daemon's reason, when it refused the connection."""
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while chunk := self.sock.recv(1 << 16):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                with self.changed:
                    for line in lines:
                        for rid in _answers(line):
                            if rid is _NOT_JSON:
                                self.not_json += 1
                            elif isinstance(rid, _Refused):
                                self.refused = rid.reason
                            else:
                                key = json.dumps(rid)
                                self.answered.add(key)
                                self.pending.discard(key)
                    self.changed.notify_all()
        with self.changed:
            self.closed.set()
            self.changed.notify_all()

    def write(self, data: bytes) -> None:
        """``data`` in one to four chunks (a message may arrive in pieces)."""
        cuts = sorted(self.rng.randrange(len(data) + 1) for _ in range(self.rng.randrange(4)))
        start = 0
        for cut in [*cuts, len(data)]:
            if cut > start:
                self.sock.sendall(data[start:cut])
                start = cut

    def wait_answered(self, rid: Any, timeout: float) -> bool:
        """Whether ``rid`` was answered within ``timeout`` seconds (False: a hang, or the session closed)."""
        key = json.dumps(rid)
        with self.changed:
            return self.changed.wait_for(lambda: key in self.answered or self.closed.is_set(), timeout) and (
                key in self.answered
            )

    def expect(self, ids: tuple[int | str, ...]) -> None:
        """Note answers owed (before writing the message that owes them)."""
        with self.lock:
            self.pending.update(json.dumps(rid) for rid in ids)

    def wait_pending_below(self, limit: int, timeout: float) -> None:
        """Wait (bounded) until fewer than ``limit`` answers are owed or the session closed."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.pending) < limit or self.closed.is_set(), timeout)

    def initialize(self, version: str) -> None:
        """The handshake (``initialize`` then ``notifications/initialized``)."""
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        }
        try:
            request = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params}
            self.write(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            self.closed.wait(5)  # the reader has the daemon's refusal, if it sent one
            raise RuntimeError(f"initialize not sent: {exc} ({self.refused or 'no refusal line'})") from None
        if not self.wait_answered("init", 10):
            raise RuntimeError(f"initialize not answered ({self.refused or 'no refusal either'})")
        self.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def close(self) -> None:
        """Close the connection (shut down first: a close alone leaves it open while the reader
        thread is blocked in ``recv``)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


@dataclass
class SiblingStats:
    """What the healthy sibling saw."""

    calls: int = 0
    failures: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def p99_ms(self) -> float:
        """The 99th-percentile call latency (ms)."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[int(len(ordered) * 0.99)] * 1e3

    def median_ms(self) -> float:
        """The median call latency (ms)."""
        return statistics.median(self.latencies) * 1e3 if self.latencies else 0.0


class Sibling:
    """A healthy session beside the fuzzer: ``tools/call`` of ``tool`` every ``interval`` seconds
    through a real ``harness mcp`` bridge started with the sibling harness's environment."""

    def __init__(self, env: dict[str, str], tool: str, interval: float = 0.05) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.tool = tool
        self.interval = interval
        self.stats = SiblingStats()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _ask(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the sibling's bridge closed")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self) -> None:
        """Handshake, then call in the background until :meth:`finish`."""
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "sibling", "version": "0"},
        }
        self._ask(0, "initialize", init)
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        self.thread.start()

    def _run(self) -> None:
        rid = 0
        while not self.stop.wait(self.interval):
            rid += 1
            started = time.perf_counter()
            try:
                answer = self._ask(rid, "tools/call", {"name": self.tool, "arguments": {"text": f"s{rid}"}})
            except (OSError, RuntimeError, ValueError) as exc:
                self.stats.failures.append(f"call {rid}: {exc}")
                return
            self.stats.latencies.append(time.perf_counter() - started)
            self.stats.calls += 1
            result = answer.get("result")
            if not isinstance(result, dict) or result.get("isError") or answer.get("id") != rid:
                self.stats.failures.append(f"call {rid}: {json.dumps(answer)[:200]}")

    def finish(self) -> SiblingStats:
        """Stop calling, close the bridge, return what it saw."""
        self.stop.set()
        self.thread.join(30)
        end_child(self.proc)
        return self.stats


@dataclass(slots=True)
class FuzzResult:
    """Counts of one fuzz run (a clean run: no hang, no dropped session, answers owed all given)."""

    messages: int = 0
    """Hostile messages written (probes not counted)."""
    bytes_sent: int = 0
    owed_answers: int = 0
    """Well-formed requests with an int/string id, and refused calls a lenient reading finds."""
    answered: int = 0
    calls_sent: int = 0
    """The ``tools/call`` among the owed answers: each must leave exactly one call-log row."""
    sessions: int = 0
    session_drops: int = 0
    """Sessions the daemon closed (it never should: every bad line costs one answer at most)."""
    hangs: list[str] = field(default_factory=list)
    """What went unanswered, or why a session could not go on."""
    not_json_answers: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class FuzzPace:
    """How a run paces itself: a ``ping`` every ``probe_every`` messages must be answered within
    10 s; at most ``max_in_flight`` owed answers are outstanding (the fuzzer waits); a new session
    every ``per_session`` messages."""

    probe_every: int = 250
    max_in_flight: int = 64
    per_session: int = 5000


def _drive_session(
    session: FuzzSession,
    traffic: Iterator[Hostile],
    budget: int,
    pace: FuzzPace,
    result: FuzzResult,
    progress: Callable[[FuzzResult], None] | None,
) -> int:
    """Write up to ``budget`` messages of ``traffic``, probing for hangs; the answers owed."""
    owed = 0
    for message in itertools.islice(traffic, budget):
        if session.closed.is_set():
            break
        if message.answer_ids:
            session.wait_pending_below(pace.max_in_flight, 30)
            session.expect(message.answer_ids)
            owed += len(message.answer_ids)
        try:
            session.write(message.data)
        except OSError as exc:
            result.hangs.append(f"session {result.sessions}: {exc} writing {message.data[:120]!r}")
            break
        result.messages += 1
        result.bytes_sent += len(message.data)
        result.calls_sent += len(message.call_ids)
        if result.messages % pace.probe_every == 0:
            probe = f"probe-{result.messages}"
            session.write(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "ping"}).encode() + b"\n")
            if not session.wait_answered(probe, 10):
                why = "closed" if session.closed.is_set() else "no answer in 10 s"
                result.hangs.append(f"{probe}: {why}")
                break
            if progress is not None:
                progress(result)
    return owed


def run_fuzz(
    socket_path: str,
    token: str,
    *,
    messages: int,
    seed: int,
    tool_names: tuple[str, ...],
    alive: Callable[[], bool],
    pace: FuzzPace = FuzzPace(),
    progress: Callable[[FuzzResult], None] | None = None,
) -> FuzzResult:
    """Write ``messages`` hostile messages over sessions of ``pace.per_session`` messages each (each
    handshake version in turn); ``alive`` says whether the daemon still runs. Each session's owed
    answers must arrive within 30 s of its last message."""
    rng = random.Random(seed)
    result = FuzzResult()
    started = time.monotonic()
    while result.messages < messages and alive():
        version = VERSIONS[result.sessions % len(VERSIONS)]
        session = FuzzSession(socket_path, token, random.Random(rng.random()))
        result.sessions += 1
        try:
            session.initialize(version)
        except RuntimeError as exc:
            result.hangs.append(f"session {result.sessions} ({version}): {exc}")
            session.close()
            break
        try:
            traffic = hostile_messages(rng.randrange(2**32), tool_names, version)
            budget = min(pace.per_session, messages - result.messages)
            owed = _drive_session(session, traffic, budget, pace, result, progress)
            session.wait_pending_below(1, 30)
            missing = len(session.pending)
            if missing:
                result.hangs.append(f"session {result.sessions} ({version}): {missing} owed answers missing")
            result.session_drops += session.closed.is_set()
            result.owed_answers += owed
            result.answered += owed - missing
            result.not_json_answers += session.not_json
        finally:
            session.close()
    if not alive():
        result.hangs.append("the daemon exited")
    result.seconds = time.monotonic() - started
    return result
