"""Immutable event types, the stored-name registry and the JSON codec. No I/O here."""

from harness.events.base import Envelope, Event, correlation_of, event_class, registered, stored
from harness.events.catalog import (
    DaemonStarted,
    DaemonStopped,
    HarnessExited,
    HarnessSpawned,
    Outcome,
    RetentionCompacted,
    SessionClosed,
    SessionInitialized,
    SessionOpened,
    Tier,
    ToolCallCompleted,
    ToolCatalogFetched,
    UpstreamExited,
    UpstreamStarted,
)
from harness.events.codec import decode, encode

__all__ = [
    "DaemonStarted",
    "DaemonStopped",
    "Envelope",
    "Event",
    "HarnessExited",
    "HarnessSpawned",
    "Outcome",
    "RetentionCompacted",
    "SessionClosed",
    "SessionInitialized",
    "SessionOpened",
    "Tier",
    "ToolCallCompleted",
    "ToolCatalogFetched",
    "UpstreamExited",
    "UpstreamStarted",
    "correlation_of",
    "decode",
    "encode",
    "event_class",
    "registered",
    "stored",
]
