"""Immutable event types, the stored-name registry and the JSON codec. No I/O here."""

from harness.events.attribution import Attribution
from harness.events.base import Event, correlation_of, event_class, registered, stored
from harness.events.codec import decode, encode
from harness.events.daemon import ConfigReloaded, DaemonStarted, DaemonStopped, LogGap, RetentionCompacted
from harness.events.envelope import Envelope
from harness.events.harnesses import (
    HarnessExited,
    HarnessSpawned,
    HarnessStateChanged,
    HarnessSurvivorStopped,
)
from harness.events.sessions import (
    SessionClosed,
    SessionInitialized,
    SessionOpened,
    ToolCallCompleted,
    ToolSearchCompleted,
)
from harness.events.upstreams import (
    CircuitClosed,
    CircuitOpened,
    ToolCatalogFetched,
    UpstreamExited,
    UpstreamStarted,
    UpstreamStateChanged,
)

__all__ = [
    "Attribution",
    "CircuitClosed",
    "CircuitOpened",
    "ConfigReloaded",
    "DaemonStarted",
    "DaemonStopped",
    "Envelope",
    "Event",
    "HarnessExited",
    "HarnessSpawned",
    "HarnessStateChanged",
    "HarnessSurvivorStopped",
    "LogGap",
    "RetentionCompacted",
    "SessionClosed",
    "SessionInitialized",
    "SessionOpened",
    "ToolCallCompleted",
    "ToolCatalogFetched",
    "ToolSearchCompleted",
    "UpstreamExited",
    "UpstreamStarted",
    "UpstreamStateChanged",
    "correlation_of",
    "decode",
    "encode",
    "event_class",
    "registered",
    "stored",
]
