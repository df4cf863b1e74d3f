"""What an upstream asks of the gateway during a session (handshake era): ``ping`` is answered
here; an elicitation goes to the session of the call that asked; everything else (sampling, roots)
is refused, as ADR-0035 says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.gateway.calls.inflight import CallInflight
from harness.gateway.wire import jsonrpc


def answer_server_request(
    message: dict[str, Any],
    owner: CallInflight | None,
    in_flight: Callable[[], list[CallInflight]],
    send: Callable[[dict[str, Any]], None],
) -> None:
    """Answer (or relay) one request from the upstream. An elicitation belongs to ``owner``, the call
    whose response stream carried it (Streamable HTTP), else to the one call in flight when exactly
    one is (on stdio nothing on the wire says which call it belongs to)."""
    upstream_id = message["id"]

    def answer(reply: dict[str, Any]) -> None:
        send({"jsonrpc": "2.0", "id": upstream_id, **reply})

    method = message.get("method")
    if method == "ping":
        answer({"result": {}})
        return
    if method != "elicitation/create":
        answer(
            {"error": {"code": jsonrpc.METHOD_NOT_FOUND, "message": f"the gateway does not forward {method}"}}
        )
        return
    calls = [owner] if owner is not None and not owner.done else in_flight()
    if len(calls) == 1:
        calls[0].caller.relay_request(calls[0], message, answer)
        return
    why = (
        f"{len(calls)} calls are in flight on this upstream and nothing says which one asks"
        if calls
        else "no call is in flight on this upstream"
    )
    answer({"error": {"code": jsonrpc.INVALID_REQUEST, "message": f"the gateway cannot relay it: {why}"}})
