"""A session's MCP features beyond tools: prompts (side-loaded and the upstreams'), completion,
resources and their subscriptions, logging, and upstream requests relayed to the agent
(elicitation). Owned by its :class:`~harness.gateway.downstream.session.DownstreamSession`, on the
loop; none of it is on the per-call path, and none of it makes a call-log row (no tool ran).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from harness.gateway.downstream import prompt_proxy
from harness.gateway.downstream.log_relay import LEVELS, RANK, LogRelay
from harness.gateway.downstream.resource_proxy import Reading, ResourceView, Subscriptions, same_link
from harness.gateway.library.prompts import PromptLibrary
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc

log = logging.getLogger(__name__)

PROMPT_METHODS = frozenset({"prompts/list", "prompts/get", "completion/complete"})
RESOURCE_METHODS = frozenset(
    {
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)
MISSING_CAPABILITY = -32021
"""The error an upstream gets for a request the agent's client cannot take (no capability for it)."""
MAX_IN_FLIGHT = 16
"""Requests of these kinds one session may have waiting on upstreams; more are refused."""


class ServerFeatures:
    """Answers one session's prompts, completion, resources and logging requests, and relays
    upstream requests to its agent."""

    def __init__(
        self,
        *,
        send: Callable[[bytes], None],
        servers: Callable[[], tuple[str, ...]],
        running: Callable[[str], UpstreamLink | None],
        prompts: Callable[[], PromptLibrary] | None,
        subscriptions: Subscriptions | None,
        log_relay: LogRelay | None,
        prompt_allowed: Callable[[str], bool] = lambda _name: True,
        reading: Reading = same_link,
    ) -> None:
        self.send, self._servers = send, servers
        self._prompt_allowed = prompt_allowed
        """Whether the policy lets an upstream's prompt, by its exposed name, through."""
        self._running = running
        """An upstream's wire if it runs for this session now, never starting one (``shared = false``
        instances start on a tool call, not on a listing)."""
        self._reading = reading
        """Where a ``prompts/get`` or ``resources/read`` goes (a 2026-07-28 session: the twin)."""
        self._prompts = prompts
        self._subscriptions = subscriptions
        self._log_relay = log_relay
        self._resources = ResourceView(servers, running, subscriptions, reading) if subscriptions else None
        self.log_level: str | None = None
        """The level the agent set with ``logging/setLevel`` (None: it gets no log messages)."""
        self.client_capabilities: dict[str, Any] = {}
        """What the agent's client declared at ``initialize``."""
        self._in_flight: dict[Any, bool] = {}
        """Requests waiting on upstreams, by id: True once the client cancelled one."""
        self._relayed: dict[int, Callable[[dict[str, Any]], None]] = {}
        """Upstream requests relayed to the agent (elicitations), by the id given them."""
        self._next_relay_id = 1
        self._closed = False
        self.send_related: Callable[[bytes, Any], None] = lambda line, _request_id: self.send(line)
        """Sends a line that belongs to a request of the agent's (the HTTP endpoint puts it on that
        request's response stream)."""

    def capabilities(self) -> dict[str, Any]:
        """What ``initialize`` declares besides tools, from the exposed upstreams running now."""
        upstream = [link.capabilities for s in self._servers() if (link := self._running(s)) is not None]
        declared: dict[str, Any] = {}
        side_loaded = self._prompts is not None and bool(self._prompts().prompts)
        if self._prompts is not None and (side_loaded or any("prompts" in c for c in upstream)):
            declared["prompts"] = {"listChanged": False}
        if self._prompts is not None and any("completions" in c for c in upstream):
            declared["completions"] = {}
        if self._log_relay is not None and any("logging" in c for c in upstream):
            declared["logging"] = {}
        if self._resources is not None and any("resources" in c for c in upstream):
            declared["resources"] = {"subscribe": True, "listChanged": True}
        return declared

    def serves(self, method: str) -> bool:
        """Whether ``method`` is answered here."""
        return (
            (method in PROMPT_METHODS and self._prompts is not None)
            or (method in RESOURCE_METHODS and self._resources is not None)
            or (method == "logging/setLevel" and self._log_relay is not None)
        )

    def in_flight(self, request_id: Any) -> bool:
        """Whether a request with this id is waiting here."""
        return request_id in self._in_flight

    def handle(self, request_id: Any, method: str, params: Any) -> None:
        """One request :meth:`serves` said yes to."""
        if method == "logging/setLevel":
            self._set_level(request_id, params)
        elif method in PROMPT_METHODS:
            assert self._prompts is not None
            library = self._prompts()
            work = prompt_proxy.answer(
                request_id,
                method,
                params,
                library,
                self._servers(),
                self._running,
                self._prompt_allowed,
                self._reading,
            )
            self._answer_later(request_id, method, work)
        else:
            assert self._resources is not None
            self._answer_later(request_id, method, self._resources.answer(self, request_id, method, params))

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a request: True if it was one of these (its answer is dropped)."""
        if request_id not in self._in_flight:
            return False
        self._in_flight[request_id] = True
        return True

    def _set_level(self, request_id: Any, params: Any) -> None:
        """``logging/setLevel``: this session's level, and its upstreams' (``log_relay``)."""
        assert self._log_relay is not None
        level = params.get("level") if isinstance(params, dict) else None
        if level not in RANK:
            detail = f"logging/setLevel needs params.level, one of {', '.join(LEVELS)}"
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, detail))
            return
        self.log_level = level
        self.send(jsonrpc.result(request_id, {}))
        self._log_relay.level_asked(link for s in self._servers() if (link := self._running(s)) is not None)

    def _answer_later(self, request_id: Any, method: str, work: Awaitable[bytes]) -> None:
        """A request answered from a task (it asks upstreams), at most MAX_IN_FLIGHT at once."""
        if request_id in self._in_flight or len(self._in_flight) >= MAX_IN_FLIGHT:
            if asyncio.iscoroutine(work):
                work.close()
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, "too many requests in flight"))
            return
        self._in_flight[request_id] = False
        task = asyncio.ensure_future(work)

        def done(task: asyncio.Future[bytes]) -> None:
            cancelled = self._in_flight.pop(request_id, False)
            if task.cancelled() or cancelled:
                return
            error = task.exception()
            if error is not None:
                log.error("%s failed", method, exc_info=error)
                detail = f"{method} failed inside the gateway"
                self.send(jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, detail))
                return
            self.send(task.result())

        task.add_done_callback(done)

    # ---------------------------------------------------------------- upstream requests

    def relay_request(
        self, message: dict[str, Any], answer: Callable[[dict[str, Any]], None], related: Any = None
    ) -> None:
        """An upstream's elicitation during this session's call (``related``: its request id): to the
        agent, if its client declared the capability (else refused with -32021, as the MCP SDKs do),
        and its reply back."""
        method = message.get("method")
        why = self.refusal(message)
        if why is not None:
            answer({"error": {"code": MISSING_CAPABILITY, "message": f"{method} refused: {why}"}})
            return
        relay_id = self._next_relay_id
        self._next_relay_id += 1
        self._relayed[relay_id] = answer
        params = message.get("params", {})
        line = jsonrpc.encode({"jsonrpc": "2.0", "id": relay_id, "method": method, "params": params})
        self.send_related(line, related)

    def refusal(self, message: dict[str, Any]) -> str | None:
        """Why an upstream request cannot reach this agent (None: it can)."""
        if self._closed:
            return "the agent disconnected"
        if message.get("method") != "elicitation/create" or "elicitation" not in self.client_capabilities:
            return "the agent's client did not declare elicitation"
        return None

    def watch(self, uris: Iterable[str], on: bool) -> None:
        """Subscribe this session to (``on``) or from resources for a 2026-07-28 listen stream; a URI
        no exposed upstream is known to serve is honored and never fires."""
        if self._resources is None or self._subscriptions is None:
            return
        for uri in uris:
            link = self._resources.owner(uri, guess=True)
            if link is None:
                continue
            subscriptions = self._subscriptions
            work = (
                subscriptions.subscribe(self, link, uri) if on else subscriptions.unsubscribe(self, link, uri)
            )
            task = asyncio.ensure_future(work)
            task.add_done_callback(lambda done: done.cancelled() or done.exception())

    def answer(self, message: dict[str, Any]) -> None:
        """The agent's reply to a relayed request (anything else is dropped)."""
        relay_id = message.get("id")
        answer = self._relayed.pop(relay_id, None) if type(relay_id) is int else None
        if answer is None:
            return
        if isinstance(message.get("error"), dict):
            answer({"error": message["error"]})
        else:
            result = message.get("result")
            answer({"result": result if isinstance(result, dict) else {}})

    def close(self) -> None:
        """The session ended: refuse what the agent will never answer, drop its subscriptions."""
        self._closed = True
        for answer in self._relayed.values():
            answer({"error": {"code": MISSING_CAPABILITY, "message": "the agent disconnected"}})
        self._relayed.clear()
        if self._subscriptions is not None:
            left = asyncio.ensure_future(self._subscriptions.leave(self))
            left.add_done_callback(lambda done: done.cancelled() or done.exception())
