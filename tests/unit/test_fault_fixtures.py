"""The misbehaving upstream fixtures (tests/fixtures) do what their flags say, with real processes."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import Client

from support import INITIALIZE, wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STDIO_UPSTREAM = FIXTURES / "faulty_upstream.py"
HTTP_UPSTREAM = FIXTURES / "faulty_http_upstream.py"
WAIT = 5.0  # upper bound on any single wait; the tests normally take a fraction of it


class Peer:
    """A fixture process with its stdout read line by line on a thread (so every read has a timeout)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def line(self, timeout: float = WAIT) -> bytes | None:
        """The next stdout line, or None at EOF."""
        return self.lines.get(timeout=timeout)

    def message(self, timeout: float = WAIT) -> dict[str, Any]:
        line = self.line(timeout)
        assert line is not None, "the upstream closed stdout"
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, **({"params": params} if params else {})})
        answer = self.message()
        assert answer["id"] == self.next_id
        return answer

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        self.send({"method": "notifications/initialized"})
        return answer["result"]

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments or {}})

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()


@contextlib.contextmanager
def stdio_upstream(
    *flags: str, stderr: int = subprocess.DEVNULL, new_session: bool = False
) -> Iterator[Peer]:
    proc = subprocess.Popen(
        [sys.executable, str(STDIO_UPSTREAM), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=new_session,
    )
    peer = Peer(proc)
    try:
        yield peer
    finally:
        if new_session:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        proc.wait(WAIT)
        peer.reader.join(WAIT)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# ------------------------------------------------------------------------------------ stdio


def test_the_faulty_upstream_answers_the_handshake_the_listing_and_every_tool():
    with stdio_upstream() as up:
        result = up.initialize("2025-06-18")
        assert result == {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "faulty", "version": "1"},
        }
        assert up.request("ping")["result"] == {}
        tools = up.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == [
            "echo",
            "sleep",
            "hang",
            "whoami",
            "env",
            "count",
            "grow",
            "announce",
        ]
        assert all(t["annotations"] == {"readOnlyHint": True} for t in tools)
        assert up.call("echo", {"text": "héllo"})["result"] == {
            "content": [{"type": "text", "text": "héllo"}],
            "isError": False,
        }
        assert up.call("whoami")["result"]["content"][0]["text"] == str(up.proc.pid)
        env = up.call("env")["result"]
        assert env["structuredContent"]["env"]["PATH"] == os.environ["PATH"]
        assert json.loads(env["content"][0]["text"]) == env["structuredContent"]
        assert up.call("count")["result"]["content"][0]["text"] == "4"  # echo, whoami, env, count
        assert up.call("nope")["error"]["code"] == -32602
        assert up.call("announce")["result"]["content"][0]["text"] == "announced"
        assert up.message() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        assert up.request("tools/list")["result"]["tools"] == tools, "announce changes nothing"
        assert up.request("resources/list")["error"]["code"] == -32601
        up.close_stdin()
        assert up.proc.wait(WAIT) == 0


def test_the_faulty_upstream_grows_a_tool_and_says_its_list_changed():
    with stdio_upstream() as up:
        up.initialize()
        assert up.call("grow")["result"]["content"][0]["text"] == "grown1"
        assert up.message() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        names = [t["name"] for t in up.request("tools/list")["result"]["tools"]]
        assert names[-1] == "grown1"
        assert up.call("grown1")["result"]["content"][0]["text"] == "grown1"


def test_the_faulty_upstream_answers_an_unknown_protocol_version_with_2025_11_25():
    with stdio_upstream() as up:
        assert up.initialize("1999-01-01")["protocolVersion"] == "2025-11-25"


def test_the_faulty_upstream_crashes_on_the_nth_call():
    with stdio_upstream("--crash-after", "2") as up:
        up.initialize()
        assert up.call("echo", {"text": "one"})["result"]["content"][0]["text"] == "one"
        up.send({"id": 99, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "two"}}})
        assert up.line() is None  # no answer: stdout closes
        assert up.proc.wait(WAIT) == 3


def test_the_faulty_upstream_crashes_during_initialize():
    with stdio_upstream("--crash-during-initialize") as up:
        up.send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
        assert up.line() is None
        assert up.proc.wait(WAIT) == 4


def test_the_faulty_upstream_writes_garbage_before_every_answer():
    with stdio_upstream("--garbage") as up:
        up.send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
        garbage = up.line()
        assert garbage is not None
        with pytest.raises(ValueError):
            json.loads(garbage)
        assert up.message()["id"] == 1
        up.send({"id": 2, "method": "ping"})
        assert up.line() == garbage
        assert up.message() == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_the_faulty_upstream_answers_one_tool_with_a_line_over_a_mebibyte():
    with stdio_upstream("--huge-line-on", "echo") as up:
        up.initialize()
        up.send({"id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}})
        line = up.line()
        assert line is not None
        assert len(line) > 1024 * 1024
        assert line.endswith(b"\n")
        assert json.loads(line)["id"] == 5
        assert len(up.call("count")["result"]["content"][0]["text"]) < 10  # other tools answer normally


def test_the_faulty_upstream_floods_stderr():
    with stdio_upstream("--flood-stderr", stderr=subprocess.PIPE) as up:
        assert up.proc.stderr is not None
        os.set_blocking(up.proc.stderr.fileno(), False)
        received = 0

        def flooded() -> bool:
            nonlocal received
            received += len(up.proc.stderr.read(65536) or b"")
            return received > 50_000

        wait_until(flooded, timeout=WAIT)
        assert up.initialize()["serverInfo"]["name"] == "faulty"  # still answers while flooding


def test_the_faulty_upstream_survives_sigterm_and_eof_and_leaves_a_grandchild(tmp_path):
    pid_file = tmp_path / "pids.json"
    flags = ("--ignore-sigterm", "--spawn-grandchild", "--pid-file", str(pid_file))
    with stdio_upstream(*flags, new_session=True) as up:
        wait_until(pid_file.exists, timeout=WAIT)
        pids = json.loads(pid_file.read_text())
        assert pids["pid"] == up.proc.pid
        grandchild = psutil.Process(pids["grandchild"])
        assert grandchild.is_running()
        assert grandchild.ppid() == up.proc.pid
        assert os.getpgid(grandchild.pid) == os.getpgid(up.proc.pid) == up.proc.pid
        up.initialize()
        up.proc.send_signal(signal.SIGTERM)
        up.proc.send_signal(signal.SIGINT)
        assert up.request("ping")["result"] == {}
        up.close_stdin()
        with pytest.raises(subprocess.TimeoutExpired):
            up.proc.wait(0.3)
        assert up.lines.empty()  # stdout still open
        os.killpg(up.proc.pid, signal.SIGKILL)
        assert up.proc.wait(WAIT) == -signal.SIGKILL
        wait_until(lambda: gone(grandchild.pid), timeout=WAIT)


def test_the_faulty_upstream_drops_and_records_cancelled_calls(tmp_path):
    record = tmp_path / "record.jsonl"
    with stdio_upstream("--record", str(record)) as up:
        up.initialize()
        up.send({"id": 7, "method": "tools/call", "params": {"name": "hang", "arguments": {}}})
        up.send({"id": 8, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 200}}})
        up.send({"method": "notifications/cancelled", "params": {"requestId": 7, "reason": "gave up"}})
        up.send({"method": "notifications/cancelled", "params": {"requestId": 8, "reason": "bored"}})
        up.send({"method": "notifications/cancelled", "params": {"requestId": 1234}})  # unknown: ignored
        # a later, longer sleep: a late answer to 8 (200 ms) would come before this one (300 ms)
        up.send({"id": 9, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 300}}})
        assert up.message()["id"] == 9
        up.send({"id": 10, "method": "ping"})
        assert up.message()["id"] == 10  # neither 7 nor 8 was answered
        entries = read_jsonl(record)
        assert all(isinstance(e.pop("t"), float) for e in entries)  # every line carries its time
        assert entries == [
            {"method": "initialize", "id": 1, "name": None},
            {"method": "notifications/initialized", "id": None, "name": None},
            {"method": "tools/call", "id": 7, "name": "hang"},
            {"method": "tools/call", "id": 8, "name": "sleep"},
            {"method": "notifications/cancelled", "id": None, "name": None},
            {"cancelled": 7, "reason": "gave up"},
            {"method": "notifications/cancelled", "id": None, "name": None},
            {"cancelled": 8, "reason": "bored"},
            {"method": "notifications/cancelled", "id": None, "name": None},
            {"method": "tools/call", "id": 9, "name": "sleep"},
            {"method": "ping", "id": 10, "name": None},
        ]


def test_the_faulty_upstream_runs_sleep_calls_concurrently():
    with stdio_upstream() as up:
        up.initialize()
        start = time.monotonic()
        for i in (10, 11):
            up.send({"id": i, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 300}}})
        up.send({"id": 12, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "now"}}})
        assert up.message()["id"] == 12  # not held up behind the sleeps
        answers = {up.message()["id"], up.message()["id"]}
        elapsed = time.monotonic() - start
        assert answers == {10, 11}
        assert 0.29 < elapsed < 0.55


def test_the_faulty_upstream_starts_slowly_when_asked():
    with stdio_upstream("--slow-start", "0.3") as up:
        start = time.monotonic()
        up.initialize()
        assert time.monotonic() - start >= 0.3


# ------------------------------------------------------------------------------------ http


@contextlib.contextmanager
def http_upstream(*flags: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    proc = subprocess.Popen(
        [sys.executable, str(HTTP_UPSTREAM), "--port", "0", *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peer = Peer(proc)
    try:
        first = peer.line(timeout=15)
        assert first is not None, proc.stderr.read().decode() if proc.stderr else ""
        word, port = first.split()
        assert word == b"PORT"
        yield proc, int(port)
    finally:
        proc.kill()
        proc.wait(WAIT)
        peer.reader.join(WAIT)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(WAIT)


def test_the_ok_http_upstream_works_with_the_official_sdk_client(tmp_path):
    record = tmp_path / "calls.jsonl"
    with http_upstream("--mode", "ok", "--record", str(record)) as (proc, port):

        async def session(mode: str) -> tuple[str, list[str], str]:
            with anyio.fail_after(WAIT):
                async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
                    version = client.session.protocol_version
                    tools = await client.list_tools()
                    result = await client.call_tool("echo", {"text": f"over http ({mode})"})
                    text = result.content[0].text  # type: ignore[union-attr]
                    return str(version), [t.name for t in tools.tools], text

        assert anyio.run(session, "legacy") == (
            "2025-11-25",
            ["echo", "sleep", "progress", "ask"],
            "over http (legacy)",
        )
        assert anyio.run(session, "auto") == (
            "2026-07-28",
            ["echo", "sleep", "progress", "ask"],
            "over http (auto)",
        )
        assert read_jsonl(record) == [{"method": "tools/call", "name": "echo"}] * 2
        assert stop(proc) == 0


def test_the_reset_http_upstream_resets_every_connection():
    with http_upstream("--mode", "reset") as (proc, port):
        with (
            pytest.raises(
                (ConnectionResetError, BrokenPipeError)
            ),  # at connect (under load), send or receive
            socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
        ):
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
            sock.recv(1024)
        assert stop(proc) == 0


def test_the_stalling_http_upstream_never_answers():
    with http_upstream("--mode", "stall") as (proc, port):
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
            with pytest.raises(TimeoutError):
                sock.recv(1024)
        assert stop(proc) == 0


def test_the_flaky_http_upstream_drops_every_nth_request(tmp_path):
    body = json.dumps(INITIALIZE)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with http_upstream("--mode", "flaky", "--fail-every", "2") as (proc, port):
        outcomes = []
        for _ in range(4):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
            try:
                conn.request("POST", "/mcp", body, headers)
                response = conn.getresponse()
                response.read()
                outcomes.append(response.status)
            except (http.client.RemoteDisconnected, ConnectionResetError):
                outcomes.append("dropped")
            finally:
                conn.close()
        assert outcomes == [200, "dropped", 200, "dropped"]
        assert stop(proc) == 0
