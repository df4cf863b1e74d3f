"""Events of the upstream MCP servers: started, catalogue fetched, exited, supervision state, breaker."""

from __future__ import annotations

from harness.events.base import Event, stored
from harness.vocabulary import UpstreamStatus


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
    the catalogue), `handshake only` (a 2026-07-28 twin whose server speaks no 2026-07-28),
    `restarted` (a twin whose handshake instance starts again)."""


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
