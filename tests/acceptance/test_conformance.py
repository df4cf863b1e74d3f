"""The MCP conformance suite's server scenarios (``@modelcontextprotocol/conformance``, tests/npm)
through a real daemon's loopback HTTP endpoint, fronting the conformance fixture
(tests/fixtures/conformance_server.py) as its one stdio upstream. Every scenario must pass except
those in conformance-expected-failures.txt, and every scenario listed there must still fail (so the
file stays true). docs/conformance.md explains the set-up.

The suite cannot send a header of its own, and it calls the scenarios' bare tool and prompt names
(``test_simple_text``) where the gateway exposes ``conformance__test_simple_text``; the suite
therefore talks to :class:`PassThrough`, which adds the harness's bearer token and maps those names,
and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import FIXTURES, NPM_BIN, PY, clean_env, free_port, idle_harnesses, toml_list

CONFORMANCE = NPM_BIN / "conformance"
FIXTURE = FIXTURES / "conformance_server.py"
EXPECTED_FAILURES = Path(__file__).with_name("conformance-expected-failures.txt")
UPSTREAM = "conformance"
PREFIX = f"{UPSTREAM}__"
SUITE = "all"
"""Every server scenario, the suite's pending ones (``json-schema-2020-12``, ``server-sse-polling``)
included: a gateway must keep a 2020-12 schema intact too."""
SUITE_TIMEOUT_S = 300.0

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="npm install --prefix tests/npm (conformance)"),
]


# ------------------------------------------------------------------------------- the pass-through

Headers = list[tuple[str, str]]
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}


class PassThrough:
    """What stands between the suite and the gateway's endpoint, because the suite can neither send
    a bearer token nor call a namespaced name. It listens on ``[::1]:PORT`` while the gateway listens
    on ``127.0.0.1:PORT`` (the same port), so the ``Host`` and ``Origin`` the suite sends for its
    URL, ``http://[::1]:PORT/mcp``, are one of the gateway's own loopback names: they are forwarded
    exactly as sent and the gateway's DNS-rebinding checks (421/403) judge the suite's own requests.

    Each request goes to the gateway on a connection of its own, unchanged but for:

    * ``Authorization: Bearer <token>`` added (and ``Connection: close``, ``Content-Length`` set
      for the forwarded body: the framing of this hop is the pass-through's own). The suite opens a
      session per scenario (~33) and never ends one (no ``DELETE``); past 16 open sessions of one
      token the gateway ends the least recently used idle one for each new one
      (docs/configuration.md), so one token serves the whole run;
    * in the JSON-RPC body, ``params.name`` of ``tools/call`` and ``prompts/get``, and the ``ref``
      name of a ``ref/prompt`` in ``completion/complete``, get the ``conformance__`` prefix;
    * in the answers to the ``tools/list`` and ``prompts/list`` requests of that body, the prefix is
      taken off the names that have it (the gateway's own tools, ``harness_*``, have none).

    Everything else, status, headers, SSE events (progress, log messages, elicitation requests and
    their answers), refusals, resource URIs, is relayed as it comes. It answers nothing itself.
    """

    def __init__(self, listener: socket.socket, token: str) -> None:
        self._listener = listener
        self._port = int(listener.getsockname()[1])
        self._token = token
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> PassThrough:
        self._server = await asyncio.start_server(self._connected, sock=self._listener)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while (head := await _read_head(reader)) is not None:
                body = b"".join([chunk async for chunk in _body(reader, head[1], request=True)])
                if not await self._relay(head, body, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _relay(
        self,
        head: tuple[str, Headers],
        body: bytes,
        client: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Forward one request and relay its answer; False when the client connection must close."""
        start, headers = head
        body, listings = _to_gateway(body)
        forwarded = [(k, v) for k, v in headers if k.lower() not in {*HOP_BY_HOP, "content-length"}]
        forwarded += [("Authorization", f"Bearer {self._token}"), ("Connection", "close")]
        forwarded.append(("Content-Length", str(len(body))))
        g_reader, g_writer = await asyncio.open_connection("127.0.0.1", self._port)
        try:
            g_writer.write(_head(start, forwarded) + body)
            await g_writer.drain()
            answer = await _read_head(g_reader)
            if answer is None:
                return False
            status, answer_headers = answer
            kept = [(k, v) for k, v in answer_headers if k.lower() not in {*HOP_BY_HOP, "content-length"}]
            chunks = _body(g_reader, answer_headers, request=False)
            content_type = _header(answer_headers, "content-type") or ""
            if "text/event-stream" not in content_type:
                data = _from_gateway(b"".join([c async for c in chunks]), listings)
                writer.write(_head(status, [*kept, ("Content-Length", str(len(data)))]) + data)
                await writer.drain()
                return True
            writer.write(_head(status, [*kept, ("Transfer-Encoding", "chunked")]))
            relay = asyncio.ensure_future(_relay_events(chunks, listings, writer))
            gone = asyncio.ensure_future(client.read(1))  # no pipelining: only EOF can come now
            try:
                await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                relay.cancel()  # (a finished task stays as it finished)
                gone.cancel()
                relayed, _ = await asyncio.gather(relay, gone, return_exceptions=True)
            if relay.cancelled():
                return False  # the client went away first
            if isinstance(relayed, BaseException):
                raise relayed
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return gone.cancelled()
        finally:
            g_writer.close()


async def _relay_events(
    chunks: AsyncIterator[bytes], listings: set[str], writer: asyncio.StreamWriter
) -> None:
    """An SSE body, line by line, each ``data:`` line's JSON-RPC message mapped back."""
    pending = b""
    async for chunk in chunks:
        *lines, pending = (pending + chunk).split(b"\n")
        if not lines:
            continue
        out = b"".join(_event_line(line, listings) + b"\n" for line in lines)
        writer.write(b"%x\r\n%s\r\n" % (len(out), out))
        await writer.drain()
    if pending:
        writer.write(b"%x\r\n%s\r\n" % (len(pending), pending))


def _event_line(line: bytes, listings: set[str]) -> bytes:
    """One SSE line; a ``data:`` line rewritten only if its message is an answer to map back."""
    if not line.startswith(b"data:"):
        return line
    data = line[5:].strip()
    mapped = _from_gateway(data, listings)
    return line if mapped is data else b"data: " + mapped


def _to_gateway(body: bytes) -> tuple[bytes, set[str]]:
    """The body with bare names namespaced, and the ids of its ``tools/list``/``prompts/list``."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body, set()
    listings: set[str] = set()
    changed = False
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict):
            continue
        method, params = message.get("method"), message.get("params")
        if method in ("tools/list", "prompts/list") and "id" in message:
            listings.add(json.dumps(message["id"]))
        if not isinstance(params, dict):
            continue
        named = params if method in ("tools/call", "prompts/get") else None
        if method == "completion/complete" and isinstance(params.get("ref"), dict):
            named = params["ref"] if params["ref"].get("type") == "ref/prompt" else None
        if named is not None and isinstance(named.get("name"), str):
            named["name"] = PREFIX + named["name"]
            changed = True
    return (json.dumps(parsed).encode() if changed else body), listings


def _from_gateway(data: bytes, listings: set[str]) -> bytes:
    """``data`` with the prefix taken off the names in answers to the listings ``listings`` names."""
    if not listings:
        return data
    try:
        parsed = json.loads(data)
    except ValueError:
        return data
    changed = False
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict) or json.dumps(message.get("id")) not in listings:
            continue
        result = message.get("result")
        for key in ("tools", "prompts"):
            for item in result.get(key, []) if isinstance(result, dict) else []:
                if isinstance(item, dict) and str(item.get("name", "")).startswith(PREFIX):
                    item["name"] = item["name"][len(PREFIX) :]
                    changed = True
    return json.dumps(parsed).encode() if changed else data


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, Headers] | None:
    """A request or status line and its headers; None at a clean end of the connection."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise
    start, *lines = raw.decode("latin-1").split("\r\n")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines if line)]
    return start, headers


def _header(headers: Headers, name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


async def _body(reader: asyncio.StreamReader, headers: Headers, *, request: bool) -> AsyncIterator[bytes]:
    """A message body as it arrives: by Content-Length, chunked, or (an answer) until the end."""
    if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            yield await reader.readexactly(size)
            await reader.readexactly(2)
        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
            pass
    elif (length := _header(headers, "content-length")) is not None:
        if int(length):
            yield await reader.readexactly(int(length))
    elif not request:
        while chunk := await reader.read(65536):
            yield chunk


def _head(start: str, headers: Headers) -> bytes:
    return (start + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")


# ------------------------------------------------------------------------------- the suite's verdicts


def _expected_failures() -> dict[str, str]:
    """Scenario id → why it is expected to fail, from conformance-expected-failures.txt."""
    expected: dict[str, str] = {}
    for line in EXPECTED_FAILURES.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            scenario, _, reason = line.strip().partition(" ")
            assert reason.strip(), f"{EXPECTED_FAILURES.name}: {scenario} has no reason"
            expected[scenario] = reason.strip()
    return expected


def _server_scenarios() -> list[str]:
    """Every server scenario the installed suite has (``conformance list --server``)."""
    listing = subprocess.run(
        [str(CONFORMANCE), "list", "--server"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return re.findall(r"^\s+- (\S+)$", listing, flags=re.MULTILINE)


def _results(out: Path, scenarios: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, from the ``server-<scenario>-<time>/checks.json`` the suite wrote."""
    results: dict[str, list[dict[str, Any]]] = {}
    for scenario in scenarios:
        found = sorted(out.glob(f"server-{scenario}-*/checks.json"))
        matching = [
            p for p in found if re.fullmatch(rf"server-{re.escape(scenario)}-[0-9T-]+Z", p.parent.name)
        ]
        results[scenario] = json.loads(matching[-1].read_text()) if matching else []
    return results


def _failed(checks: list[dict[str, Any]]) -> list[str]:
    """Why a scenario failed, by the suite's own rule (a FAILURE or WARNING check, or no result)."""
    if not checks:
        return ["no result: the scenario did not run to the end"]
    return [
        f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description', '')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    ]


# ------------------------------------------------------------------------------- the test


def _config(port: int) -> str:
    return (
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n'
        f'[mcp.{UPSTREAM}]\nargv = {toml_list([PY, str(FIXTURE)])}\nread_tools = ["*"]\n\n'
        f'[mcp_policy.suite]\nservers = ["{UPSTREAM}"]\n\n' + idle_harnesses({"suite": "suite"})
    )


def _ipv6_loopback(port: int) -> socket.socket:
    """A listening socket on ``[::1]:port``: the pass-through's, the gateway's port on ::1."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(("::1", port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        pytest.fail(f"the pass-through needs the IPv6 loopback [::1]:{port} (the gateway's port): {exc}")
    sock.setblocking(False)
    return sock


def test_the_conformance_suites_server_scenarios_pass_through_the_gateway(start_daemon, tmp_path):
    expected = _expected_failures()
    scenarios = _server_scenarios()
    assert len(scenarios) >= 30 and set(expected) <= set(scenarios), (scenarios, expected)

    port = free_port()
    listener = _ipv6_loopback(port)
    daemon = start_daemon(_config(port))
    token = daemon.harness_envs()["suite"]["HARNESS_MCP_TOKEN"]
    out = tmp_path / "results"
    argv = [str(CONFORMANCE), "server", "--url", f"http://[::1]:{port}/mcp", "--suite", SUITE, "-o", str(out)]

    async def run_suite() -> subprocess.CompletedProcess[bytes]:
        async with PassThrough(listener, token):
            with anyio.fail_after(SUITE_TIMEOUT_S):
                return await anyio.run_process(argv, check=False, cwd=tmp_path, env=clean_env())

    with contextlib.closing(listener):
        suite = anyio.run(run_suite)
    results = _results(out, scenarios)
    failures = {s: why for s, checks in results.items() if (why := _failed(checks))}

    unexpected = {s: why for s, why in failures.items() if s not in expected}
    output = suite.stdout.decode()
    assert not unexpected, (
        "scenarios failing through the gateway:\n"
        + "\n".join(f"  {s}:\n" + "\n".join(f"    {w}" for w in why) for s, why in unexpected.items())
        + f"\nthe suite (exit {suite.returncode}):{output.partition('=== SUMMARY ===')[2] or output[-3000:]}"
        + suite.stderr.decode()[-3000:]
    )
    stale = sorted(set(expected) - set(failures))
    assert not stale, f"now passing: remove them from {EXPECTED_FAILURES.name}: {stale}"
    assert daemon.proc.poll() is None
