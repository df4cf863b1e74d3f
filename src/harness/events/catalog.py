"""Every event type the gateway emits. Past participles; stored names are stable forever."""

from __future__ import annotations

from typing import Literal

from harness.events.base import Event, stored

Outcome = Literal["ok", "tool_error", "upstream_error", "timeout", "denied", "circuit_open", "cancelled"]
Tier = Literal["read", "write"]


@stored
class DaemonStarted(Event):
    """The daemon began serving a state dir."""

    STORED_NAME = "daemon.started"
    pid: int
    version: str
    config_files: tuple[str, ...]


@stored
class DaemonStopped(Event):
    """The daemon stopped (signal or error) after stopping everything it started."""

    STORED_NAME = "daemon.stopped"
    reason: str


@stored
class UpstreamStarted(Event):
    """An upstream's process was spawned (stdio)."""

    STORED_NAME = "upstream.started"
    upstream: str
    pid: int
    command: str


@stored
class ToolCatalogFetched(Event):
    """An upstream answered ``initialize`` and ``tools/list``; ``tools_json`` is the list as received."""

    STORED_NAME = "upstream.tool_catalog_fetched"
    upstream: str
    protocol_version: str
    server_name: str
    server_version: str
    tools_json: str
    tool_count: int


@stored
class UpstreamExited(Event):
    """An upstream's process ended (crash, stop, or failed initialize)."""

    STORED_NAME = "upstream.exited"
    upstream: str
    pid: int
    returncode: int | None
    reason: str


@stored
class HarnessSpawned(Event):
    """The daemon started an agent harness process with a fresh token and run id."""

    STORED_NAME = "harness.spawned"
    harness: str
    run_id: str
    pid: int
    adapter: str
    model: str
    config_hash: str
    trace_id: str
    workdir: str


@stored
class HarnessExited(Event):
    """An agent harness process ended."""

    STORED_NAME = "harness.exited"
    harness: str
    run_id: str
    pid: int
    returncode: int | None


@stored
class SessionOpened(Event):
    """A downstream MCP session connected; ``harness`` is the token's owner (None: unattributed)."""

    STORED_NAME = "session.opened"
    session_id: str
    harness: str | None
    run_id: str | None
    transport: str
    bridge_version: int


@stored
class SessionInitialized(Event):
    """A downstream session finished its handshake at a negotiated revision."""

    STORED_NAME = "session.initialized"
    session_id: str
    protocol_version: str
    client_name: str
    client_version: str


@stored
class SessionClosed(Event):
    """A downstream session ended."""

    STORED_NAME = "session.closed"
    session_id: str
    reason: str


@stored
class ToolCallCompleted(Event):
    """One ``tools/call`` ended, whatever the outcome: the call-log row's source."""

    STORED_NAME = "tool_call.completed"
    session_id: str
    latency_ms: float
    harness: str | None
    run_id: str | None
    adapter: str | None
    model: str | None
    config_hash: str | None
    upstream: str
    tool: str
    tier: Tier
    args_hash: str
    args: str | None
    outcome: Outcome
    error_reason: str | None
    response_bytes: int
    response_tokens_est: int
    trace_id: str
    span_id: str
