"""The 2026-07-28 ("modern") protocol era on a downstream session.

A modern client never sends ``initialize``: every request carries its protocol version, client info
and capabilities in ``params._meta``; ``server/discover`` says what the gateway serves; results carry
``resultType`` (lists and reads also ``ttlMs`` and ``cacheScope``); change notifications ride only
``subscriptions/listen`` streams; and a server may not send it requests, so an upstream's elicitation
during a call becomes an ``input_required`` result that the client answers by calling again with
``inputResponses`` and the ``requestState`` it was given.

A session's era is settled when it is built (``eras.opens_modern``, or the HTTP request's
headers); everything a 2026-07-28 session sends goes through :class:`ModernWire`, which converts
at the boundary: the session and the upstream side stay in the handshake era's terms (an upstream
that speaks only 2026-07-28 is its own matter: ``upstream/modern.py``, and ``input_rounds.py`` for
its input-required answers).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from harness.gateway.calls.inflight import CallInflight
from harness.gateway.downstream import param_headers
from harness.gateway.downstream.features import MISSING_CAPABILITY
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc, revisions

MODERN_VERSIONS: Final = revisions.MODERN_VERSIONS
"""Revisions served without a handshake."""

PROTOCOL_VERSION_KEY: Final = revisions.PROTOCOL_VERSION_KEY
CLIENT_CAPABILITIES_KEY: Final = revisions.CLIENT_CAPABILITIES_KEY
CLIENT_INFO_KEY: Final = revisions.CLIENT_INFO_KEY
SERVER_INFO_KEY: Final = revisions.SERVER_INFO_KEY
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"

UNSUPPORTED_PROTOCOL_VERSION: Final = revisions.UNSUPPORTED_PROTOCOL_VERSION

CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
"""Requests whose results also carry ``ttlMs`` and ``cacheScope`` (0 and private: what a harness
may list or read follows its policy, which a reload can change at any time, and a handshake-era
upstream says nothing of how long a resource stays fresh). An upstream's own keys are replaced:
the gateway's answer is the caller's alone, never ``public``."""

LISTEN_FLAGS: Final = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
"""Change notifications, by the ``subscriptions/listen`` filter flag that asks for them."""
RESOURCE_UPDATED: Final = "notifications/resources/updated"
MAX_LISTENS: Final = 8
"""Open ``subscriptions/listen`` streams one session may hold."""

ELICITATION_KEY: Final = "harness/elicitation"
"""The ``inputRequests`` key under which an upstream's elicitation is passed to the client."""

_RESULT_HEAD: Final = b'{"jsonrpc":"2.0","id":'
_RESULT_KEY: Final = b',"result":{'
_NOTIFICATION_HEAD: Final = b'{"jsonrpc":"2.0","method":"notifications/'
_METHOD_AT: Final = len(b'{"jsonrpc":"2.0","method":"')
_CHANGES: Final = tuple(method.encode() + b'"' for method in (*LISTEN_FLAGS, RESOURCE_UPDATED))
_STAMP: Final = b'"resultType":"complete"'
_CACHE_STAMP: Final = b',"ttlMs":0,"cacheScope":"private"'
_DECODER: Final = json.JSONDecoder()


def has_envelope(params: Any) -> bool:
    """Whether a request's params carry the modern envelope (its protocol-version key is the mark)."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


@dataclass(frozen=True, slots=True)
class Envelope:
    """What one modern request says about its client."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any]


def missing_envelope(request_id: Any, params: Any) -> bytes | None:
    """The -32602 line refusing a request whose envelope is absent or lacks a required key (the
    first check of a 2026-07-28 request, before its headers and its version)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        keys = f"{PROTOCOL_VERSION_KEY!r} and {CLIENT_CAPABILITIES_KEY!r}"
        detail = f"params._meta must be an object carrying {keys}"
        return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, detail)
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        detail = f"params._meta is missing the required envelope key(s): {', '.join(missing)}"
        return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, detail)
    return None


def read_envelope(request_id: Any, params: Any) -> Envelope | bytes:
    """The request's envelope, or the error line that refuses it (the SDKs' checks, in their order)."""
    if (refusal := missing_envelope(request_id, params)) is not None:
        return refusal
    meta = params["_meta"]
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"{PROTOCOL_VERSION_KEY} must be a string")
    if version not in MODERN_VERSIONS:
        supported = ", ".join(MODERN_VERSIONS)
        return unsupported_version(
            request_id, version, f"protocol version {version!r} is not supported ({supported})"
        )
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    info = meta.get(CLIENT_INFO_KEY)
    return Envelope(
        version,
        capabilities if isinstance(capabilities, dict) else {},
        info if isinstance(info, dict) else {},
    )


def strip_envelope(params: dict[str, Any]) -> None:
    """Take the envelope out of a request's params: it is this hop's, and an upstream spoken to in
    the handshake era refuses a request that carries it."""
    meta = params["_meta"]
    for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY):
        meta.pop(key, None)
    if not meta:
        del params["_meta"]


def unsupported_version(request_id: Any, requested: Any, message: str) -> bytes:
    """-32022 naming the revisions this era serves."""
    data: dict[str, Any] = {"supported": list(MODERN_VERSIONS)}
    if isinstance(requested, str):
        data["requested"] = requested
    return jsonrpc.error(request_id, UNSUPPORTED_PROTOCOL_VERSION, message, data)


@dataclass(frozen=True, slots=True)
class Listen:
    """One open ``subscriptions/listen`` stream: the change kinds and resource URIs it asked for."""

    flags: frozenset[str]
    uris: frozenset[str]

    def wants(self, method: str, params: Any) -> bool:
        """Whether a change notification belongs on this stream."""
        if method == RESOURCE_UPDATED:
            return isinstance(params, dict) and params.get("uri") in self.uris
        return LISTEN_FLAGS.get(method) in self.flags

    def honored(self) -> dict[str, Any]:
        """The acknowledged filter (every kind asked for is honored; a URI nothing serves never fires)."""
        filt: dict[str, Any] = dict.fromkeys(sorted(self.flags), True)
        if self.uris:
            filt["resourceSubscriptions"] = sorted(self.uris)
        return filt


def read_listen(params: Any) -> Listen | str:
    """The stream a ``subscriptions/listen`` asks for, or why it is malformed."""
    notifications = params.get("notifications") if isinstance(params, dict) else None
    if not isinstance(notifications, dict):
        return "subscriptions/listen needs params.notifications, an object"
    uris = notifications.get("resourceSubscriptions") or []
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        return "params.notifications.resourceSubscriptions must be a list of URIs"
    flags = frozenset(flag for flag in LISTEN_FLAGS.values() if notifications.get(flag) is True)
    return Listen(flags, frozenset(uris))


class Waiting(Protocol):
    """A call waiting for the client to call again with a ``requestState`` it was given."""

    call: CallInflight

    def drop(self) -> None:
        """The session ended before the client called again."""
        ...


@dataclass(slots=True)
class Suspended:
    """A call waiting for the client's answer to an upstream's elicitation."""

    link: UpstreamLink
    call: CallInflight
    answer: Callable[[dict[str, Any]], None]

    def drop(self) -> None:
        """The session ended: the upstream hears so, and its call is cancelled."""
        self.answer({"error": {"code": MISSING_CAPABILITY, "message": "the agent disconnected"}})
        self.link.cancel_call(self.call.upstream_id, "the client disconnected")


@dataclass(slots=True)
class ModernWire:
    """A modern session's outgoing side: results stamped, change notifications put on the listen
    streams that asked for them, and the calls suspended on an ``input_required`` result."""

    raw_send: Callable[[bytes], None]
    cacheable: set[Any] = field(default_factory=set)
    """Ids of requests in :data:`CACHEABLE_METHODS` not answered yet."""
    listens: dict[Any, Listen] = field(default_factory=dict)
    suspended: dict[str, Waiting] = field(default_factory=dict)
    """Calls waiting for inputResponses, by the requestState given to the client."""

    def send(self, line: bytes) -> None:
        """Send one line the session wrote in handshake-era terms, converted."""
        if line.startswith(_RESULT_HEAD):
            self.raw_send(self._stamped(line))
        elif line.startswith(_NOTIFICATION_HEAD):
            self._notify(line)
        elif not line.startswith(b"{"):
            self.raw_send(line)
        else:  # an upstream's answer with its own key order
            self.raw_send(self._restamped(line))

    def _stamped(self, line: bytes) -> bytes:
        """``resultType`` (and the cache keys) spliced into a result line without re-encoding it."""
        start = len(_RESULT_HEAD)
        text = line[start : start + 300].decode("utf-8", "ignore")
        try:
            request_id, end = _DECODER.raw_decode(text)
        except ValueError:
            return self._restamped(line)
        at = start + len(text[:end].encode())
        if not line.startswith(_RESULT_KEY, at):
            self.cacheable.discard(request_id)
            return line  # an error answer
        cacheable = request_id in self.cacheable
        if b'"resultType"' in line or (cacheable and (b'"ttlMs"' in line or b'"cacheScope"' in line)):
            return self._restamped(line)
        at += len(_RESULT_KEY)
        stamp = _STAMP
        if cacheable:
            self.cacheable.discard(request_id)
            stamp += _CACHE_STAMP
        if line[at : at + 1] != b"}":
            stamp += b","
        return line[:at] + stamp + line[at:]

    def _restamped(self, line: bytes) -> bytes:
        try:
            message = json.loads(line)
        except ValueError:
            return line
        result = message.get("result") if isinstance(message, dict) else None
        if not isinstance(result, dict):
            return line
        result.setdefault("resultType", "complete")
        request_id = message.get("id")
        if jsonrpc.is_id(request_id) and request_id in self.cacheable:
            self.cacheable.discard(request_id)
            result.update(ttlMs=0, cacheScope="private")  # the gateway's, whatever an upstream said
        return jsonrpc.encode(message)

    def _notify(self, line: bytes) -> None:
        """Progress and log messages pass; change notifications go only to the streams that asked."""
        if not any(line.startswith(change, _METHOD_AT) for change in _CHANGES):
            self.raw_send(line)
            return
        message = json.loads(line)
        method, params = message["method"], message.get("params")
        for listen_id, listen in self.listens.items():
            if listen.wants(method, params):
                stamped = {
                    **(params if isinstance(params, dict) else {}),
                    "_meta": {SUBSCRIPTION_ID_KEY: listen_id},
                }
                self.raw_send(jsonrpc.notification(method, stamped))

    def acknowledge(self, listen_id: Any, listen: Listen) -> None:
        """Open a listen stream: its acknowledgement is its first frame."""
        self.listens[listen_id] = listen
        params = {"_meta": {SUBSCRIPTION_ID_KEY: listen_id}, "notifications": listen.honored()}
        self.raw_send(jsonrpc.notification("notifications/subscriptions/acknowledged", params))

    def suspend(
        self,
        link: UpstreamLink,
        call: CallInflight,
        request: Mapping[str, Any],
        answer: Callable[[dict[str, Any]], None],
    ) -> None:
        """Answer the call's request with ``input_required`` carrying the upstream's elicitation; the
        upstream call stays open until the client calls again with the answer."""
        state = os.urandom(16).hex()
        self.suspended[state] = Suspended(link, call, answer)
        result = {
            "resultType": "input_required",
            "inputRequests": {
                ELICITATION_KEY: {"method": request["method"], "params": request.get("params", {})}
            },
            "requestState": state,
        }
        self.raw_send(jsonrpc.result(call.downstream_id, result))

    def forget(self, call: CallInflight) -> None:
        """A suspended call ended (deadline, upstream exit): its requestState no longer resumes."""
        for state, entry in list(self.suspended.items()):
            if entry.call is call:
                del self.suspended[state]


HEADER_MISMATCH: Final = -32020
NAMED_BY: Final = revisions.NAMED_BY
HTTP_STATUS_OF_ERROR: Final = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    -32021: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}
"""The HTTP status of a 2026-07-28 request answered with an error (200 for the rest)."""


def header_mismatch(headers: Mapping[str, str], message: dict[str, Any]) -> str | None:
    """Why a 2026-07-28 request's routing headers disagree with its body (None: they agree):
    ``MCP-Protocol-Version`` repeats the envelope's version, ``Mcp-Method`` the method, and
    ``Mcp-Name`` the tool or prompt name or resource URI."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if headers.get("mcp-protocol-version") != version:
        return "the MCP-Protocol-Version header does not match the request envelope's protocol version"
    method = message.get("method")
    if headers.get("mcp-method") != method:
        return "the Mcp-Method header does not match the request's method"
    key = NAMED_BY.get(method) if isinstance(method, str) else None
    if (
        key is not None
        and isinstance(params, dict)
        and param_headers.decode(headers.get("mcp-name")) != params.get(key)
    ):
        return f"the Mcp-Name header does not match the request's params.{key}"
    return None


def http_status(line: bytes) -> int:
    """The HTTP status for a 2026-07-28 request's one JSON answer."""
    if b'"error"' not in line:
        return 200
    try:
        error = json.loads(line).get("error")
    except ValueError:
        return 200
    code = error.get("code") if isinstance(error, dict) else None
    return HTTP_STATUS_OF_ERROR.get(code, 200) if type(code) is int else 200
