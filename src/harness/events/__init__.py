"""Immutable event types, the stored-name registry and the JSON codec. No I/O here."""

from harness.events.attribution import Attribution
from harness.events.base import Event, correlation_of, event_class, registered, stored
from harness.events.catalog import (
    CircuitClosed,
    CircuitOpened,
    ConfigReloaded,
    DaemonStarted,
    DaemonStopped,
    HarnessExited,
    HarnessSpawned,
    HarnessStateChanged,
    LogGap,
    RetentionCompacted,
    SessionClosed,
    SessionInitialized,
    SessionOpened,
    ToolCallCompleted,
    ToolCatalogFetched,
    ToolSearchCompleted,
    UpstreamExited,
    UpstreamStarted,
    UpstreamStateChanged,
)
from harness.events.codec import decode, encode
from harness.events.envelope import Envelope

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
