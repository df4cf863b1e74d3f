"""Every event type the gateway emits. Past participles; stored names are stable forever."""

from __future__ import annotations

from harness.events.base import Event, stored
from harness.vocabulary import HarnessRestart, Outcome, Tier, UpstreamStatus


@stored
class DaemonStarted(Event):
    """The daemon began serving a state dir."""

    STORED_NAME = "daemon.started"
    pid: int
    """The daemon's process id."""

    version: str
    """The harness-gateway package version."""

    config_files: tuple[str, ...]
    """The configuration files read, in order."""


@stored
class DaemonStopped(Event):
    """The daemon stopped (signal or error) after stopping everything it started."""

    STORED_NAME = "daemon.stopped"
    reason: str
    """Why it stopped: the signal's name (`SIGTERM`, `SIGINT`) or what asked it to."""


@stored
class UpstreamStarted(Event):
    """An upstream's connection was opened: a stdio child spawned (its pid), or an HTTP session
    (pid 0, ``command`` is the URL)."""

    STORED_NAME = "upstream.started"
    upstream: str
    """The upstream key: `[mcp.NAME]`'s NAME, or `NAME@<project id>` for a project file's upstream."""

    pid: int
    """The child's process id."""

    command: str
    """argv[0] of the child (never its arguments or environment)."""


@stored
class ToolCatalogFetched(Event):
    """An upstream answered ``initialize`` (or, speaking only 2026-07-28, ``server/discover``) and
    ``tools/list``; ``tools_json`` is the list as kept."""

    STORED_NAME = "upstream.tool_catalog_fetched"
    upstream: str
    """The upstream key."""

    protocol_version: str
    """The protocol revision the upstream answered to `initialize` (`2026-07-28`: it speaks only that)."""

    server_name: str
    """`serverInfo.name` from `initialize` (or the `server/discover` answer's `_meta`)."""

    server_version: str
    """`serverInfo.version` from `initialize`."""

    tools_json: str
    """The `tools/list` array (all pages concatenated) as kept: tools an MCP client would refuse
    dropped or mended, at most 2,000 (docs/call-log.md, "Tool names"); compact JSON text."""

    tool_count: int
    """Number of tools in `tools_json`."""


@stored
class UpstreamExited(Event):
    """An upstream's process or HTTP session ended (a crash, a stop, a restart, or a failed start)."""

    STORED_NAME = "upstream.exited"
    upstream: str
    """The upstream key."""

    pid: int
    """The child's process id."""

    returncode: int | None
    """Its exit status (negative: killed by that signal); null if unknown."""

    reason: str
    """`stopped` (the daemon stopped it for good; its `upstream.state_changed` says why),
    `restart requested` (`harness restart`), or how it ended on its own (the supervisor decides on a
    restart): `exited with code N`, `killed by signal N` or `exited`, each with the last stderr lines
    after a colon; `cannot start: …`; for an HTTP upstream `transport error: …`,
    `the upstream refused the session: …`, `aborted` or `closed`."""


@stored
class HarnessSpawned(Event):
    """The daemon started an agent harness process with a fresh token and run id."""

    STORED_NAME = "harness.spawned"
    VERSION = 2
    harness: str
    """The harness name (`[harness.NAME]`)."""

    run_id: str
    """This run's id (one per spawn)."""

    pid: int
    """The agent process id."""

    adapter: str
    """The adapter (`generic`, `claude-code`, `codex`, `crush`)."""

    model: str
    """The configured model (may be empty)."""

    config_hash: str
    """SHA-256 of the harness's effective configuration at spawn."""

    trace_id: str
    """The run's trace id (32 hex digits)."""

    workdir: str
    """The agent's working directory."""

    restarted_run_id: str | None
    """The run this one restarted after it failed (the supervisor's restart); null for a start
    (v1 rows: null)."""


@stored
class HarnessExited(Event):
    """An agent harness process ended."""

    STORED_NAME = "harness.exited"
    harness: str
    """The harness name."""

    run_id: str
    """The run that ended."""

    pid: int
    """The agent process id."""

    returncode: int | None
    """Its exit status; null if unknown."""


@stored
class HarnessStateChanged(Event):
    """A harness that ended on its own with a failure is restarted after a backoff, or given up."""

    STORED_NAME = "harness.state_changed"
    harness: str
    """The harness name."""

    run_id: str
    """The run that ended."""

    state: HarnessRestart
    """`restarting`: a new run starts after `delay_s`; `failed`: it failed too often (more than 5
    restarts within 60 s) and stays down until `harness start` or `harness restart`."""

    restarts: int
    """Restarts since the backoff was last reset."""

    delay_s: float | None
    """For `restarting`: seconds until the next start."""

    returncode: int | None
    """The exit status that ended the run (negative: the signal)."""


@stored
class HarnessSurvivorStopped(Event):
    """At start, the daemon stopped a harness run that a previous daemon, killed without a clean
    stop, had left running (so one workdir never has two agents)."""

    STORED_NAME = "harness.survivor_stopped"
    harness: str
    """The harness name."""

    run_id: str
    """The previous daemon's run of it."""

    pid: int
    """The harness process the previous daemon started."""

    leader_alive: bool
    """Whether that process itself still ran (else only processes of its session did)."""

    pids: tuple[int, ...]
    """Every process stopped: the harness first if it still ran, then those of its session."""


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
class RetentionCompacted(Event):
    """Retention removed the events (and their call-log rows) older than a cutoff.

    The latest tool catalogue of each upstream is kept whatever its age. Recorded by the log writer
    in the transaction that finished the compaction.
    """

    STORED_NAME = "retention.compacted"
    older_than: float
    """The cutoff in event time (seconds since the epoch): events with an earlier ``ts`` were removed."""

    events_removed: int
    """Events deleted from the log."""

    calls_removed: int
    """Rows deleted from ``call_log``."""

    catalogs_kept: int
    """Tool catalogue events older than the cutoff kept because each is its upstream's latest."""

    seconds: float
    """Wall time the compaction took, all its steps together."""


@stored
class LogGap(Event):
    """Events the log writer's intake dropped because it was full, recorded as soon as the writer
    wrote again: what a dataset lacks, by stored name and time range. No other event is ever lost
    without one (a store that refuses writes makes the writer keep its group and retry)."""

    STORED_NAME = "log.gap"
    events: int
    """How many events were dropped."""

    names: tuple[str, ...]
    """The stored names of the dropped events, in the order of `counts`."""

    counts: tuple[int, ...]
    """How many of each name were dropped (`names[i]`: `counts[i]`)."""

    first_ts: float
    """Event time of the first dropped event."""

    last_ts: float
    """Event time of the last dropped event."""

    store_error: str | None
    """Why the writer could not keep up, when the store refused writes meanwhile (`disk full`, …);
    null when it was only behind."""


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


@stored
class UpstreamStateChanged(Event):
    """An upstream's supervision state changed (starting, up, restarting, failed, stopped)."""

    STORED_NAME = "upstream.state_changed"
    upstream: str
    """The upstream key."""

    state: UpstreamStatus
    """The new state. `failed`: it restarted too often; calls fail fast until a restart or reload."""

    restarts: int
    """Restarts since the backoff was last reset."""

    delay_s: float | None
    """For `restarting`: seconds until the next start."""

    reason: str
    """Why: `initialized` (it answered its handshake), `exited` (it ended; a restart follows),
    `flapping` (it restarted too often), `restart requested` (`harness restart`), or for `stopped`:
    `daemon stopping`, `reload` (a reload removed or changed its table), `harness exited` (a
    `shared = false` instance's harness ended), `catalogue probed` (an instance started only to read
    the catalogue)."""


@stored
class CircuitOpened(Event):
    """An upstream's breaker opened: calls fail fast with `circuit_open` for the cooldown."""

    STORED_NAME = "circuit.opened"
    upstream: str
    """The upstream key."""

    failures: int
    """Consecutive transport errors and timeouts that opened it."""

    cooldown_s: float
    """Seconds before one probe call may try the upstream again."""


@stored
class CircuitClosed(Event):
    """An upstream's breaker closed: a probe call succeeded."""

    STORED_NAME = "circuit.closed"
    upstream: str
    """The upstream key."""


@stored
class ConfigReloaded(Event):
    """The daemon re-read its configuration and applied it to live sessions."""

    STORED_NAME = "config.reloaded"
    config_files: tuple[str, ...]
    """The configuration files read, in order."""

    upstreams_changed: tuple[str, ...]
    """Upstream keys added, removed or changed (restarted)."""

    harnesses_stopped: tuple[str, ...]
    """Harnesses stopped because their table was removed."""
