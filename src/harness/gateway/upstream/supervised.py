"""One upstream's life: connect, handshake, fetch the catalogue, and restart as its supervisor decides.

The status (starting, up, restarting, failed, stopped) and the restart history belong to the
upstream's :class:`~harness.gateway.supervision.Supervisor` (the harnesses' shape); this object tells
it what happened, publishes each change (the status the link reads per call, then
``upstream.state_changed``) and starts again when it says so. The wire is the ``UpstreamLink``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any

from harness.actors.snapshots import Published
from harness.events import Event, ToolCatalogFetched, UpstreamExited, UpstreamStarted, UpstreamStateChanged
from harness.gateway.processes import BoundedLog
from harness.gateway.supervision import Change, Supervisor
from harness.gateway.upstream import modern
from harness.gateway.upstream.catalogue import MAX_TOOLS, check_catalogue
from harness.gateway.upstream.link import INIT_TIMEOUT_S, UpstreamLink, result_of
from harness.gateway.upstream.transports import Connect, Transport
from harness.gateway.wire import jsonrpc
from harness.vocabulary import StopReason, UpstreamStatus

log = logging.getLogger(__name__)

UPSTREAM_PROTOCOL_VERSION = "2025-11-25"
"""The handshake revision asked of upstreams; one that refuses the handshake is discovered (modern.py)."""
EXIT_REPORT_S = 2.0
"""How long a requested restart waits for the closed transport to report its exit."""
FIRST_ANSWER_WAIT_S = 5.0
"""How long ``ready`` and a reload wait for new upstreams' handshakes; a later one joins when it
answers (its tools reach sessions through ``notifications/tools/list_changed``)."""
NO_ANSWER_YET = "started, no answer to initialize yet"


class SupervisedUpstream:
    """Starts, restarts and stops one upstream's connection under its ``Supervisor``."""

    def __init__(
        self,
        link: UpstreamLink,
        *,
        status: Published[UpstreamStatus],
        connect: Connect,
        publish: Callable[[Event], None],
        log_file: BoundedLog,
        tools_announced: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        name: str = "",
        era_twin: bool = False,
        starting: Callable[[], None] = lambda: None,
    ) -> None:
        self.link = link
        self._tools_announced = tools_announced
        self.config = link.config
        self.name = name or link.config.key
        """As its events name it: the upstream's key (``NAME@<project id>`` for a project's), or
        for an era twin, the key and its revision (``era_twins.py``)."""
        self.era_twin = era_twin
        """A 2026-07-28 instance beside a handshake one (``era_twins.py``): opened with
        ``server/discover``, its catalogue read but not published (the handshake instance's is the
        upstream's)."""
        self._starting = starting
        self._status = status
        self.supervisor = Supervisor(
            restart=self._restart_due,
            changed=self._changed,
            delay=lambda: self.config.restart_delay,
            clock=clock,
        )
        status.current = self.supervisor.status
        self.protocol_version = ""
        self.server_info: dict[str, Any] = {}
        """``serverInfo`` of the last handshake: every catalogue event of this process carries it."""
        self.tools: list[dict[str, Any]] = []
        """The catalogue as kept (:func:`~harness.gateway.upstream.catalogue.check_catalogue`)."""
        self.catalogue_notes: tuple[str, ...] = ()
        """What the last catalogue check dropped or mended, one line per tool (``harness doctor``)."""
        self.pid = 0
        self.first_attempt = link.first_attempt
        self.failure = ""
        """Why the last start failed (empty once a start succeeded)."""
        self._connect = connect
        self._publish = publish
        self._log = log_file
        self._transport: Transport | None = None
        self._stopping = False
        self._requested: str | None = None
        self._asking = "initialize"
        """The request of the gateway's own last sent (a timeout names it)."""
        self._ended = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        link.on_list_changed = self._list_changed

    # ---------------------------------------------------------------- start

    def begin(self) -> None:
        """:meth:`start` in the background (``first_attempt`` is set when it is over)."""
        self._spawn(self.start())

    async def start(self) -> None:
        """Connect, run the handshake and fetch the catalogue; a failure counts as an exit."""
        self._starting()
        transport = self._connect(self.link.receive, lambda code, why: self._closed(code, why, transport))
        self._transport = transport
        self._ended = asyncio.Event()
        self.link.attach(transport)
        try:
            await transport.open()
            self.pid = transport.pid
            command = self.config.argv[0] if self.config.argv else str(self.config.url)
            self._publish(UpstreamStarted(ts=time.time(), upstream=self.name, pid=self.pid, command=command))
            await self._handshake()
            self.supervisor.up()  # up once its handshake and catalogue are done
            self.failure = ""
        except Exception as exc:  # any failure leaves the upstream down, never the daemon
            reason = _describe(exc, self._asking, transport.garbled)
            self.failure = reason
            log.warning("upstream %s: start failed: %s", self.name, reason)
            self._log.write(f"[harness] start failed: {reason}\n".encode())
            if self._transport is transport:
                transport.abort()
                if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
                    self._closed(None, f"cannot start: {reason}")  # nothing was spawned: no exit comes
        finally:
            self.first_attempt.set()

    async def _handshake(self) -> None:
        """``initialize``, or for an upstream that refuses it (and an era twin), ``server/discover``
        (2026-07-28)."""
        self.link.modern = None
        if self.era_twin:
            await self._discover(None)
            await self.refresh_tools()  # the twin's own tools (the headers a call repeats over HTTP)
            return
        self._asking = "initialize"
        reply = await self.link.ask(
            "initialize",
            {
                "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
                # Elicitation is relayed to the one session whose call is in flight (link.py), so
                # the gateway declares it; a session whose client lacks it is refused per request.
                "capabilities": modern.GATEWAY_CAPABILITIES,
                "clientInfo": modern.GATEWAY_INFO,
            },
            timeout=INIT_TIMEOUT_S,  # a slow start (npx, a JVM) is not a slow call
        )
        error = reply.get("error")
        if isinstance(error, dict) and not str(error.get("message")).startswith(jsonrpc.GARBLED):
            await self._discover(reply)  # refused, not garbled
        else:
            init = result_of("initialize", reply)
            self.protocol_version = str(init.get("protocolVersion", ""))
            info = init.get("serverInfo")
            self.server_info = info if isinstance(info, dict) else {}
            capabilities = init.get("capabilities")
            self.link.capabilities = capabilities if isinstance(capabilities, dict) else {}
            self.link.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.refresh_tools(reply)

    async def _discover(self, refused: dict[str, Any] | None) -> None:
        """Speak 2026-07-28 if the upstream's ``server/discover`` lists it, else fail (with the error
        of the ``initialize`` it ``refused``, if it did)."""
        self._asking = "server/discover"
        params = {"_meta": modern.envelope()}
        try:
            found = modern.discovered(result_of(self._asking, await self.link.ask(self._asking, params)))
        except RuntimeError as exc:
            found = str(exc)
        if isinstance(found, str):
            why = found if refused is None else f"initialize failed: {refused['error']} ({found})"
            raise RuntimeError(why)  # noqa: TRY004
        self.link.modern = found.era
        self.protocol_version = found.era.version
        self.server_info = found.server_info
        self.link.capabilities = found.capabilities
        if wanted := modern.listen_filter(found.capabilities):  # change notifications come only on it
            self.link.send_request("subscriptions/listen", {"notifications": wanted})

    async def refresh_tools(self, init: dict[str, Any] | None = None) -> None:
        """Fetch every page of ``tools/list`` (until past the cap), keep what an MCP client accepts,
        log what was dropped or mended, and publish the catalogue when it changed."""
        listed: list[Any] = []
        cursor: Any = None
        for _page in range(1000):
            self._asking = "tools/list"
            page = await self.link.request("tools/list", {"cursor": cursor} if cursor else {})
            tools_listed = page.get("tools", ())
            listed.extend(tools_listed if isinstance(tools_listed, list) else ())
            cursor = page.get("nextCursor")
            if not cursor or len(listed) > MAX_TOOLS:
                break
        checked = check_catalogue(self.name, self.protocol_version, listed)
        if checked.notes != self.catalogue_notes:
            self._log.write("".join(f"[harness] {note}\n" for note in checked.notes).encode())
        self.catalogue_notes = checked.notes
        tools = checked.tools
        changed = tools != self.tools or init is not None
        self.tools = tools
        if changed and not self.era_twin:
            info = self.server_info  # a refresh after list_changed has no handshake of its own
            self._publish(
                ToolCatalogFetched(
                    ts=time.time(),
                    upstream=self.name,
                    protocol_version=self.protocol_version,
                    server_name=str(info.get("name", "")),
                    server_version=str(info.get("version", "")),
                    tools_json=json.dumps(tools, ensure_ascii=False, separators=(",", ":")),
                    tool_count=len(tools),
                )
            )

    def _list_changed(self) -> None:
        if self.link.available:
            self._spawn(self._refresh_quietly())

    async def _refresh_quietly(self) -> None:
        """The upstream announced a new tool list: fetch it; one that came back the same is still
        announced to the sessions it serves (``tools_announced``)."""
        before = self.tools
        with contextlib.suppress(Exception):
            await self.refresh_tools()
            if self.tools == before:
                self._tools_announced()

    # ---------------------------------------------------------------- exits and restarts

    def _closed(self, returncode: int | None, reason: str, transport: Transport | None = None) -> None:
        """The connection ended: fail what was in flight, record it, ask the supervisor what now
        (not for an exit the daemon asked for: a stop or a restart)."""
        if self._transport is None or (transport is not None and transport is not self._transport):
            return
        self._transport = None
        self._ended.set()
        self.link.detach()
        requested = self._requested
        self._publish(
            UpstreamExited(
                ts=time.time(),
                upstream=self.name,
                pid=self.pid,
                returncode=returncode,
                reason="stopped" if self._stopping else (requested or reason),
            )
        )
        if not self._stopping and requested is None:
            self.supervisor.exited()
            if self.supervisor.status == "failed":
                log.error(
                    "upstream %s: restarted too often; failed until `harness restart` or a reload", self.name
                )

    async def _restart_due(self) -> None:
        """The supervisor's restart: the start runs as a task of its own (a ``harness restart`` of
        the upstream meanwhile does not cut it short; a stop does)."""
        self._spawn(self.start())

    def _changed(self, change: Change) -> None:
        """Publish the new status: first the snapshot the link reads per call, then the event."""
        state = change.state
        self._status.current = state.status
        delay_s = None if change.delay is None else round(change.delay, 3)
        self._publish(
            UpstreamStateChanged(
                ts=time.time(),
                upstream=self.name,
                state=state.status,
                restarts=state.attempt,
                delay_s=delay_s,
                reason=change.reason,
            )
        )

    async def restart(self, reason: str) -> None:
        """``harness restart``: stop as at shutdown (stdin closed, SIGTERM, SIGKILL), forget the
        restart history, start again. The exit is recorded with ``reason``, not as a crash."""
        self.supervisor.call_off()
        transport, ended = self._transport, self._ended
        if transport is not None:
            self._requested = reason
            try:
                await transport.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), EXIT_REPORT_S)
                self._closed(None, reason, transport)  # if it has not reported its exit by now
            finally:
                self._requested = None
        self.supervisor.reset(reason)
        await self.start()

    async def stop(self, reason: StopReason = "daemon stopping") -> None:
        """Stop for good (politely: stdin closed, then SIGTERM, then SIGKILL); ``reason`` goes into
        its ``upstream.state_changed``."""
        self._stopping = True
        self.supervisor.call_off()
        if self._transport is not None:
            await self._transport.close()
        self.supervisor.stopped(reason)
        for task in list(self._tasks):
            task.cancel()
        self._log.close()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _describe(exc: BaseException, asking: str, garbled: str) -> str:
    """A failure as one line: what went wrong, never an empty string. A timeout after a line the
    transport could not read is that line's fault (``garbled``: why it was refused)."""
    if isinstance(exc, TimeoutError) and garbled:
        return f"{asking} answer was not valid JSON-RPC: {garbled}"
    if isinstance(exc, TimeoutError):
        return f"no answer to {asking} within {INIT_TIMEOUT_S:g}s"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


async def wait_first_attempts(
    upstreams: Sequence[SupervisedUpstream], others: Iterable[asyncio.Future[Any]] = ()
) -> dict[str, str]:
    """Wait at most :data:`FIRST_ANSWER_WAIT_S` for each upstream's first start to end, and for
    ``others`` (never cancelling any); by upstream key, why each is not up: it has not answered yet,
    or its start failed."""
    waits = [asyncio.ensure_future(up.first_attempt.wait()) for up in upstreams]
    if pending := [*waits, *others]:
        await asyncio.wait(pending, timeout=FIRST_ANSWER_WAIT_S)
    for wait in waits:
        wait.cancel()
    late = {up.name: NO_ANSWER_YET for up in upstreams if not up.first_attempt.is_set()}
    return late | {up.name: f"did not start: {up.failure}" for up in upstreams if up.failure}


class StopsUnderWay:
    """Stops begun in futures of their own: cancelling whoever waits for one (a reload or a
    harness-exit task the stopping daemon cancels) does not cut it short, which would leave a
    process and its actors running; the daemon's stop waits for every one (:meth:`wait`)."""

    def __init__(self) -> None:
        self._futures: set[asyncio.Future[Any]] = set()

    def begin(self, *stops: Awaitable[Any]) -> asyncio.Future[Any]:
        """Start ``stops`` together, to run to the end whoever waits (a caller that cannot wait)."""
        future: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*stops, return_exceptions=True))
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return future

    async def run(self, *stops: Awaitable[Any]) -> None:
        """Run ``stops`` together and wait for them; cancelling this wait leaves them running."""
        await asyncio.shield(self.begin(*stops))

    async def wait(self) -> None:
        """Until every stop begun so far has ended."""
        await asyncio.gather(*list(self._futures), return_exceptions=True)
