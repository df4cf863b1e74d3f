"""A downstream MCP session: one agent's endpoint, with its identity, revision and tool view."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from harness import __version__
from harness.actors.policy import Identity
from harness.actors.tool_views import ToolView
from harness.events import Event, SessionClosed, SessionInitialized
from harness.gateway import jsonrpc
from harness.gateway.calls import CallInflight
from harness.gateway.recording import CallRecorder
from harness.gateway.upstream import UpstreamLink, UpstreamState

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Revisions a downstream session can negotiate through ``initialize`` (oldest first)."""

SERVER_NAME = "harness"


class DownstreamSession:
    """Handles one agent's JSON-RPC messages; the hot path is :meth:`_call_tool`."""

    def __init__(
        self,
        *,
        identity: Identity,
        view: ToolView,
        links: Mapping[str, UpstreamLink],
        recorder: CallRecorder,
        emit: Callable[[Event], None],
        send: Callable[[bytes], None],
        on_close: Callable[[DownstreamSession], None] | None = None,
    ) -> None:
        self.session_id = os.urandom(8).hex()
        self.identity = identity
        self.view = view
        self.protocol_version = ""
        self.calls: dict[Any, tuple[UpstreamLink, int]] = {}
        self.recorder = recorder
        self.send = send
        self._links = links
        self._emit = emit
        self._closed = False
        self._on_close = on_close

    # ---------------------------------------------------------------- dispatch

    def handle(self, message: Any) -> None:
        """Dispatch one parsed message."""
        if not isinstance(message, dict):
            self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a message must be a JSON object"))
            return
        method = message.get("method")
        if not isinstance(method, str):
            if "id" not in message:
                self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "not a JSON-RPC request"))
            return  # a response to a server→client request: none are sent yet
        if "id" not in message:
            self._notification(method, message.get("params"))
            return
        request_id = message["id"]
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            self.send(
                jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a request id must be a string or an integer")
            )
            return
        if method == "tools/call":
            self._call_tool(request_id, message)
        elif method == "tools/list":
            self._list_tools(request_id)
        elif method == "ping":
            self.send(jsonrpc.result(request_id, {}))
        elif method == "initialize":
            self._initialize(request_id, message.get("params"))
        else:
            self.send(jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"))

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            entry = self.calls.pop(params.get("requestId"), None)
            if entry is not None:
                link, uid = entry
                link.cancel_call(uid, "cancelled by the client")

    def _initialize(self, request_id: Any, params: Any) -> None:
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        self.protocol_version = version
        info = params.get("clientInfo") if isinstance(params, dict) else None
        info = info if isinstance(info, dict) else {}
        self.send(
            jsonrpc.result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": SERVER_NAME, "version": __version__},
                    "instructions": "Harness gateway: tools of the upstream MCP servers your policy allows, "
                    "named <upstream>__<tool>.",
                },
            )
        )
        self._emit(
            SessionInitialized(
                ts=time.time(),
                session_id=self.session_id,
                protocol_version=version,
                client_name=str(info.get("name", ""))[:200],
                client_version=str(info.get("version", ""))[:200],
            )
        )

    def _list_tools(self, request_id: Any) -> None:
        head = jsonrpc.encode({"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}})
        # Splice the pre-encoded tool array in place of the empty one.
        self.send(head.replace(b'"tools":[]', b'"tools":' + self.view.tools_json, 1))

    # ---------------------------------------------------------------- calls

    def _call_tool(self, request_id: Any, message: dict[str, Any]) -> None:
        started = time.perf_counter()
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "tools/call needs params.name"))
            return
        name: str = params["name"]
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            self.send(
                jsonrpc.error(
                    request_id, jsonrpc.INVALID_PARAMS, "tools/call params.arguments must be an object"
                )
            )
            return
        route = self.view.routes.get(name)
        if route is None:
            self._refuse(request_id, "unknown_tool", name, arguments, started)
            return
        if route.tier == "write" and "write" not in self.identity.allow:
            self._refuse(request_id, "not_permitted", name, arguments, started)
            return
        link = self._links.get(route.upstream)
        if link is None or link.state is not UpstreamState.UP:
            self._refuse(request_id, "upstream_unavailable", name, arguments, started)
            return
        if request_id in self.calls:
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, "request id already in flight"))
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        call = CallInflight(self, request_id, link.new_call_id(), route, arguments, token, started)
        self.calls[request_id] = (link, call.upstream_id)
        link.forward_call(call, message, params)

    def _refuse(self, request_id: Any, reason: str, name: str, arguments: Any, started: float) -> None:
        route = self.view.routes.get(name)
        if reason == "unknown_tool":
            detail, step = (
                f"no tool named {name!r} in this session",
                "List tools again and use a listed name.",
            )
        elif reason == "not_permitted":
            detail = f"{name!r} is a write tool and this harness may only call read tools"
            step = "Ask the operator to add 'write' to this harness's mcp_allow, or use a read tool."
        else:
            detail = f"the upstream of {name!r} is down or restarting"
            step = "Its tools stay listed; retry in a few seconds."
        line = jsonrpc.gateway_error(request_id, reason, detail, step)
        self.send(line)
        self.recorder.record(
            session=self,
            upstream=route.upstream if route else "harness",
            tool=route.tool if route else name[:200],
            tier=route.tier if route else "read",
            arguments=arguments,
            outcome=jsonrpc.OUTCOME_OF_REASON[reason],  # type: ignore[arg-type]
            reason=reason,
            started=started,
            response_bytes=len(line),
            span_id=os.urandom(8).hex(),
        )

    # ---------------------------------------------------------------- life

    def replace_view(self, view: ToolView) -> None:
        """A new effective tool set: tell the client only if it changed."""
        if view.fingerprint == self.view.fingerprint:
            return
        self.view = view
        self.send(jsonrpc.notification("notifications/tools/list_changed"))

    def close(self, reason: str) -> None:
        """The connection ended: cancel what is in flight upstream and record the end."""
        if self._closed:
            return
        self._closed = True
        for link, uid in list(self.calls.values()):
            link.cancel_call(uid, "the client disconnected")
        self.calls.clear()
        self._emit(SessionClosed(ts=time.time(), session_id=self.session_id, reason=reason))
        if self._on_close is not None:
            self._on_close(self)
