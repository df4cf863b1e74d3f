"""Events of the agent harnesses the daemon spawns: spawned, exited, restarted or given up, survivors."""

from __future__ import annotations

from harness.events.base import Event, stored
from harness.vocabulary import HarnessRestart


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
