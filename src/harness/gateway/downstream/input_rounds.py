"""Input-required results of 2026-07-28 upstreams (SEP-2322) on their way to the agent.

A 2026-07-28 client gets the result as the upstream gave it, under a ``requestState`` of the
gateway's own (the upstream's is kept with the call and goes back with the retry, so a retry reaches
the call that asked, beside the gateway's own elicitation relay). A handshake-era client gets each
input request as an ``elicitation/create``; with every answer in, the gateway retries the call with
``inputResponses`` and the upstream's ``requestState``. Either way it stays one call, one call-log
row, however many rounds; sampling and roots requests are refused (ADR-0035).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from harness.gateway.calls.inflight import CallInflight
from harness.gateway.downstream.call_records import Session, ToolCall
from harness.gateway.downstream.features import MISSING_CAPABILITY
from harness.gateway.upstream import modern
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.revisions import CLIENT_CAPABILITIES_KEY

MAX_ROUNDS: Final = 10
"""Input rounds one call may take (as the SDKs' clients cap them): an upstream asking forever ends."""


@dataclass(slots=True)
class Continuation:
    """A call whose upstream asked for input, waiting for the 2026-07-28 client to call again."""

    link: UpstreamLink
    call: CallInflight
    upstream_state: Any

    def drop(self) -> None:
        """The session ended: the call ends unanswered (nothing is open upstream)."""
        self.call.cancelled()


class InputRounds:
    """A session's calls between an upstream's input-required answer and the retry."""

    def __init__(self, session: Session, inflight: dict[Any, tuple[UpstreamLink, CallInflight]]) -> None:
        self._session = session
        self._inflight = inflight
        self.asking: dict[Any, CallInflight] = {}
        """Calls of a handshake-era client waiting for its answers to relayed input requests."""
        self._rounds: dict[CallInflight, int] = {}
        self._timers: dict[CallInflight, asyncio.TimerHandle] = {}

    def arrived(self, call: CallInflight, result: dict[str, Any]) -> None:
        """The upstream answered ``call`` with ``result``, an input-required one."""
        entry = self._inflight.pop(call.downstream_id, None)
        if entry is None or entry[1] is not call:
            call.cancelled()  # the caller let it go meanwhile
            return
        link = entry[0]
        rounds = self._rounds[call] = self._rounds.get(call, 0) + 1
        requests = result.get("inputRequests") or {}
        unrelayable = modern.unrelayable(result)
        if unrelayable is not None:
            _refuse(call, *unrelayable)
            return
        if rounds > MAX_ROUNDS:
            detail = f"the upstream asked for input more than {MAX_ROUNDS} times in one call"
            _refuse(call, jsonrpc.INTERNAL_ERROR, detail)
            return
        refused = next(filter(None, map(self._session.features.refusal, requests.values())), None)
        if refused is not None:
            _refuse(call, MISSING_CAPABILITY, f"{modern.RELAYED_INPUT} refused: {refused}")
            return
        self._expire_after(link, call)
        wire = self._session.modern
        if wire is None:
            self._relay(link, call, requests, result.get("requestState"))
            return
        call.answerable = False
        state = os.urandom(16).hex()
        wire.suspended[state] = Continuation(link, call, result.get("requestState"))
        forwarded = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
        wire.raw_send(jsonrpc.result(call.downstream_id, forwarded))

    def resume(self, entry: Continuation, retry: ToolCall) -> None:
        """The 2026-07-28 client called again with its ``inputResponses``: the call goes on under the
        retry's request id."""
        call = entry.call
        call.downstream_id = retry.request_id
        meta = retry.params.get("_meta")
        call.progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
        call.answerable = True
        self._retry(entry.link, call, retry.params.get("inputResponses"), entry.upstream_state)

    def _relay(self, link: UpstreamLink, call: CallInflight, requests: dict[str, Any], state: Any) -> None:
        """Ask the handshake-era agent each input request; retry once every answer is in (at once
        when the upstream sent only its ``requestState``)."""
        if not requests:
            self._retry(link, call, None, state)
            return
        self.asking[call.downstream_id] = call
        responses: dict[str, Any] = {}

        def answered(key: str) -> Callable[[dict[str, Any]], None]:
            def answer(reply: dict[str, Any]) -> None:
                if call.done or self.asking.get(call.downstream_id) is not call:
                    return
                if "result" not in reply:
                    del self.asking[call.downstream_id]
                    call.answered({"jsonrpc": "2.0", "error": reply.get("error")})
                    return
                responses[key] = reply["result"]
                if len(responses) == len(requests):
                    del self.asking[call.downstream_id]
                    self._retry(link, call, responses, state)

            return answer

        for key, request in requests.items():
            self._session.features.relay_request(request, answered(key), call.downstream_id)

    def _retry(self, link: UpstreamLink, call: CallInflight, responses: Any, state: Any) -> None:
        """The call again upstream, with the agent's answers and the upstream's ``requestState``."""
        timer = self._timers.pop(call, None)
        if timer is not None:
            timer.cancel()
        call.upstream_id = link.new_call_id()
        params: dict[str, Any] = {"name": call.route.tool, "arguments": call.arguments, "_meta": {}}
        declare(self._session, link, params)
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        message = {"jsonrpc": "2.0", "id": call.upstream_id, "method": "tools/call", "params": params}
        self._inflight[call.downstream_id] = (link, call)
        link.submit(call, message, params)

    def _expire_after(self, link: UpstreamLink, call: CallInflight) -> None:
        """An agent that never answers: the call times out after the upstream's ``timeout``."""

        def expire() -> None:
            self._timers.pop(call, None)
            call.failed(
                "timeout", f"no answer to {link.name!r}'s input request within {link.config.timeout:g}s"
            )

        self._timers[call] = asyncio.get_running_loop().call_later(link.config.timeout, expire)

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a call waiting for its answers (True: it was one)."""
        call = self.asking.pop(request_id, None)
        if call is not None:
            call.cancelled()
        return call is not None

    def ended(self, call: CallInflight) -> None:
        """A call is over: forget its rounds."""
        self._rounds.pop(call, None)
        if self.asking.get(call.downstream_id) is call:
            del self.asking[call.downstream_id]
        timer = self._timers.pop(call, None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        """The agent went away: calls waiting for its answers end."""
        for call in list(self.asking.values()):
            call.cancelled()
        self.asking.clear()


def declare(session: Session, link: UpstreamLink, params: dict[str, Any]) -> None:
    """A 2026-07-28 agent's call to an upstream spoken to in 2026-07-28 declares the capabilities
    the agent's client declared (of them, what the gateway relays: ``ModernUpstream.stamp``), so the
    upstream asks only what the agent can answer, as it would directly."""
    if session.modern is not None and link.modern is not None:
        declared = session.features.client_capabilities
        params["_meta"] = {**(params.get("_meta") or {}), CLIENT_CAPABILITIES_KEY: declared}


def _refuse(call: CallInflight, code: int, message: str) -> None:
    """End the call with a JSON-RPC error, recorded as its upstream's answer would be."""
    call.answered({"jsonrpc": "2.0", "error": {"code": code, "message": message}})
