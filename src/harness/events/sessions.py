"""Events of the downstream sessions and their calls: opened, initialized, closed, a tool call, a search."""

from __future__ import annotations

from harness.events.base import Event, stored
from harness.vocabulary import Outcome, Tier


@stored
class SessionOpened(Event):
    """A downstream MCP session connected; ``harness`` is the token's owner (None: unattributed)."""

    STORED_NAME = "session.opened"
    session_id: str
    """The downstream session's id."""

    harness: str | None
    """The token's owner; null when unattributed."""

    run_id: str | None
    """The owner's current run; null when unattributed."""

    transport: str
    """How the session arrived (`stdio-bridge`, ...)."""

    bridge_version: int
    """The bridge preamble's protocol version."""


@stored
class SessionInitialized(Event):
    """A downstream session finished its handshake at a negotiated revision."""

    STORED_NAME = "session.initialized"
    VERSION = 2
    session_id: str
    """The downstream session's id."""

    harness: str | None
    """The token's owner; null when unattributed (v1 rows: null)."""

    protocol_version: str
    """The negotiated protocol revision."""

    client_name: str
    """`clientInfo.name` the agent sent."""

    client_version: str
    """`clientInfo.version` the agent sent."""


@stored
class SessionClosed(Event):
    """A downstream session ended."""

    STORED_NAME = "session.closed"
    VERSION = 2
    session_id: str
    """The downstream session's id."""

    harness: str | None
    """The token's owner; null when unattributed (v1 rows: null)."""

    reason: str
    """Why it ended (`disconnected`, ...)."""


@stored
class ToolCallCompleted(Event):
    """One ``tools/call`` ended, whatever the outcome: the call-log row's source."""

    STORED_NAME = "tool_call.completed"
    VERSION = 3
    FLAT_FIELDS = True
    session_id: str
    """The downstream session that made the call."""

    latency_ms: float
    """Gateway clock, request in to response out, in milliseconds."""

    harness: str | None
    """The token's owner; null when unattributed."""

    run_id: str | None
    """The owner's run; null when unattributed."""

    adapter: str | None
    """The run's adapter."""

    model: str | None
    """The run's model."""

    config_hash: str | None
    """The run's configuration hash."""

    upstream: str
    """The real upstream key, or `harness` for tools the gateway answers itself."""

    tool: str
    """The tool's own name (not namespaced)."""

    tier: Tier
    """`read` or `write`."""

    args_hash: str | None
    """SHA-256 (hex) of the canonical JSON arguments; null under `call_log_args = "none"`."""

    args: str | None
    """Redacted canonical JSON arguments, or null per `call_log_args`. Always JSON: past 4 KiB its
    longest strings are cut, each ending `…[truncated]` (v1 and v2 rows: cut anywhere)."""

    args_truncated: bool = False
    """Whether `args` was cut to fit 4 KiB (v1 and v2 rows: whether it ends `…[truncated]`)."""

    args_bytes: int | None = None
    """UTF-8 bytes of the canonical JSON arguments as sent, before redaction and any cut; null under
    `call_log_args = "none"` (and in v1 and v2 rows)."""

    outcome: Outcome
    """`ok`, `tool_error`, `upstream_error`, `timeout`, `denied`, `circuit_open` or `cancelled`."""

    error_reason: str | None
    """The gateway's reason (`not_permitted`, `timeout`, ...) when there is one."""

    response_bytes: int
    """Bytes of the response line the agent received."""

    response_tokens_est: int
    """`response_bytes` / 4, rounded up."""

    trace_id: str
    """The run's trace id."""

    span_id: str
    """The call's span id."""

    exposed_name: str
    """The name the agent called, as its session exposed it (`<upstream>__<tool>` or its shortened
    form; a gateway tool's own name, e.g. `search_tools`); through `call_tool`, the name inside it.
    v2 rows: derived from `upstream` and `tool` by the naming rule."""

    via_call_tool: bool | None
    """Whether the agent reached the tool through the gateway's `call_tool` (null in v2 rows)."""

    request_id: str | None
    """The JSON-RPC request id as JSON text (`7`, `"abc"`); null when the request had none it could
    use, and in v2 rows."""


@stored
class ToolSearchCompleted(Event):
    """A ``search_tools`` call answered: the query and the tools it returned, best first.

    Recorded beside the call's own ``tool_call.completed`` row so that evals can ask whether the
    tool a session called next was among the results (the search hit rate).
    """

    STORED_NAME = "tool_search.completed"
    VERSION = 2
    session_id: str
    """The downstream session that searched."""

    harness: str | None
    """The token's owner; null when unattributed."""

    run_id: str | None
    """The owner's run; null when unattributed."""

    query: str | None
    """The query as stored under `call_log_args`: redacted (`redacted`), else null (v1 rows: as sent)."""

    k: int
    """How many results the agent asked for (after the gateway's default and cap)."""

    results: tuple[str, ...]
    """The exposed names returned, best first (only tools the session's policy allows)."""

    latency_ms: float
    """Time the search took, in milliseconds."""
