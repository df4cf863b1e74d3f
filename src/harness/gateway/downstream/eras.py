"""What each protocol revision changes for a downstream session: the ``initialize`` handshake,
JSON-RPC batches (2025-03-26 only), and the 2026-07-28 envelope with its own methods.

The era is settled before a session is built, by whoever opens it (:func:`opens_modern` on the
bridge connection's first message; the HTTP endpoint from the request's headers and envelope), and
passed in; these functions answer the era's own methods. The session keeps the state they set
(``protocol_version`` and the open batch its output passes through).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from harness import __version__
from harness.gateway.downstream import modern_era
from harness.gateway.downstream.features import ServerFeatures
from harness.gateway.downstream.modern_era import ModernWire
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import BatchReplies

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Revisions a downstream session can negotiate through ``initialize`` (oldest first)."""

SERVER_NAME = "harness"
INSTRUCTIONS = (
    "Harness gateway: tools of the upstream MCP servers your policy allows, named <upstream>__<tool>."
)


REMOVED_METHODS = frozenset(
    ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")
)
"""Handshake-era methods the 2026-07-28 revision removed: a 2026-07-28 request for one is -32601."""


def opens_modern(message: Any) -> bool:
    """Whether a connection's first message opens its session in the 2026-07-28 era: a request,
    not ``initialize``, whose params carry the envelope (anything else opens the handshake era)."""
    return (
        isinstance(message, dict)
        and message.get("method") != "initialize"
        and modern_era.has_envelope(message.get("params"))
    )


class EraSession(Protocol):
    """What the eras read and set of a session (:class:`~.session.DownstreamSession`)."""

    protocol_version: str
    modern: ModernWire | None
    features: ServerFeatures
    answers_batches: bool
    batches: BatchReplies | None
    wire: Callable[[bytes], None]
    """The era's output (the transport's, or the 2026-07-28 wire's), under any open batch."""

    def send(self, line: bytes) -> None:
        """The session's output."""
        ...

    def handle(self, message: Any) -> None:
        """Dispatch one parsed message."""
        ...

    def begin(self, version: str, info: Any) -> None:
        """The session's revision is settled."""
        ...


def _capabilities(session: EraSession) -> dict[str, Any]:
    return {"tools": {"listChanged": True}, **session.features.capabilities()}


def initialize(session: EraSession, request_id: Any, message: dict[str, Any]) -> None:
    """The handshake: the revision the client asked for (else the newest), once per session."""
    if session.protocol_version:
        detail = f"already initialized at {session.protocol_version}; a session initializes once"
        session.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
        return
    params = message.get("params")
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    info = params.get("clientInfo") if isinstance(params, dict) else None
    declared = params.get("capabilities") if isinstance(params, dict) else None
    session.features.client_capabilities = declared if isinstance(declared, dict) else {}
    result = {
        "protocolVersion": version,
        "capabilities": _capabilities(session),
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "instructions": INSTRUCTIONS,
    }
    session.send(jsonrpc.result(request_id, result))
    session.begin(version, info)


def batch(session: EraSession, messages: list[Any]) -> None:
    """A JSON-RPC batch (legal in 2025-03-26 only): each member handled as if sent alone; the
    answers go out as one array once all are in (an empty batch is an invalid request). While a
    batch is open, the session sends through its :class:`BatchReplies`."""
    if not messages:
        session.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "an empty batch"))
        return
    replies = _batch_replies(session)
    if replies is not None:
        replies.begin(messages)
    try:
        for message in messages:
            if isinstance(message, list):
                session.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a batch inside a batch"))
            else:
                session.handle(message)
    finally:
        if replies is not None:
            replies.handled()


def _batch_replies(session: EraSession) -> BatchReplies | None:
    """The open batches' collector, which the session sends through until they are answered (None:
    the transport assembles batch answers itself, as the HTTP endpoint does)."""
    if not session.answers_batches:
        return None
    if session.batches is None:

        def idle() -> None:
            session.batches = None

        session.batches = BatchReplies(session.wire, idle)
    return session.batches


def modern_request(session: EraSession, request_id: Any, method: str, params: Any) -> bool:
    """A request on a 2026-07-28 session: its envelope checked, the era's own methods answered, the
    removed ones refused. True: dispatch it as usual."""
    if method == "initialize" and not modern_era.has_envelope(params):
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        why = "this session serves the 2026-07-28 protocol; the initialize handshake is not accepted on it"
        session.send(modern_era.unsupported_version(request_id, asked, why))
        return False
    envelope = modern_era.read_envelope(request_id, params)
    if isinstance(envelope, bytes):
        session.send(envelope)
        return False
    wire = session.modern
    assert wire is not None
    if not session.protocol_version:
        session.begin(envelope.version, envelope.client_info)
    if method in REMOVED_METHODS:
        detail = f"method not found: {method} (the 2026-07-28 revision removed it)"
        session.send(jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, detail))
        return False
    session.features.client_capabilities = envelope.capabilities
    modern_era.strip_envelope(params)
    if method in modern_era.CACHEABLE_METHODS:
        wire.cacheable.add(request_id)
    if method == "server/discover":
        result = {
            "supportedVersions": list(modern_era.MODERN_VERSIONS),
            "capabilities": _capabilities(session),
            "instructions": INSTRUCTIONS,
            "_meta": {modern_era.SERVER_INFO_KEY: {"name": SERVER_NAME, "version": __version__}},
        }
        session.send(jsonrpc.result(request_id, result))
        return False
    if method == "subscriptions/listen":
        _listen(session, wire, request_id, params)
        return False
    return True


def _listen(session: EraSession, wire: ModernWire, request_id: Any, params: Any) -> None:
    """Open a change stream: acknowledged now, fed by :class:`ModernWire`, answered never (the
    client ends it by cancelling)."""
    listen = modern_era.read_listen(params)
    if isinstance(listen, str):
        session.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, listen))
    elif request_id in wire.listens or len(wire.listens) >= modern_era.MAX_LISTENS:
        detail = f"at most {modern_era.MAX_LISTENS} listen streams, each with its own request id"
        session.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
    else:
        wire.acknowledge(request_id, listen)
        session.features.watch(listen.uris, True)


def refuse_envelope(session: EraSession, request_id: Any) -> None:
    """A request carrying the 2026-07-28 envelope on a handshake-era session."""
    detail = (
        f"this session serves the handshake era ({session.protocol_version or 'not initialized'}); "
        "requests carrying the 2026-07-28 envelope are not accepted on it"
    )
    session.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))


def stop_listening(session: EraSession, request_id: Any) -> None:
    """The client cancelled a listen stream (if ``request_id`` is one)."""
    if session.modern is not None and (listen := session.modern.listens.pop(request_id, None)):
        session.features.watch(listen.uris, False)
