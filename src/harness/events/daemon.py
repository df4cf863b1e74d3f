"""The daemon's own events and its log's: started, stopped, reloaded, compacted, a gap."""

from __future__ import annotations

from harness.events.base import Event, stored


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
class ConfigReloaded(Event):
    """The daemon re-read its configuration and applied it to live sessions."""

    STORED_NAME = "config.reloaded"
    config_files: tuple[str, ...]
    """The configuration files read, in order."""

    upstreams_changed: tuple[str, ...]
    """Upstream keys added, removed or changed (restarted)."""

    harnesses_stopped: tuple[str, ...]
    """Harnesses stopped because their table was removed."""


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
