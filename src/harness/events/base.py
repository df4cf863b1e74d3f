"""The event base class, the registry of stored names, and the stored envelope.

An event is an immutable fact. Each class declares a stable stored name (``STORED_NAME``) and a
version (``VERSION``); neither derives from the module path, and a stored name is never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Event(BaseModel):
    """Base of every event: a frozen pydantic model with a stored name, a version and a time."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    STORED_NAME: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1

    ts: float
    """Event time: seconds since the epoch (UTC) from the gateway clock."""


_REGISTRY: dict[str, type[Event]] = {}


def stored(cls: type[Event]) -> type[Event]:
    """Register an event class under its ``STORED_NAME``; a name is taken once, forever."""
    name = cls.STORED_NAME
    if not name:
        raise TypeError(f"{cls.__name__} has no STORED_NAME")
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise TypeError(f"stored name {name!r} is already taken by {_REGISTRY[name].__name__}")
    _REGISTRY[name] = cls
    return cls


def event_class(stored_name: str) -> type[Event]:
    """The class registered under ``stored_name``; KeyError if unknown."""
    return _REGISTRY[stored_name]


def registered() -> dict[str, type[Event]]:
    """A copy of the registry: stored name → class."""
    return dict(_REGISTRY)


@dataclass(frozen=True, slots=True)
class Envelope:
    """An event as stored: its position in the log, its stored name and version, and correlation."""

    position: int
    name: str
    version: int
    correlation: str
    event: Event

    @property
    def ts(self) -> float:
        """The event's own time."""
        return self.event.ts


def correlation_of(event: Event) -> str:
    """What an event correlates with: its session, else its run, else its upstream, else ''."""
    data: Any = event
    for attr in ("session_id", "run_id", "upstream"):
        value = getattr(data, attr, None)
        if value:
            return str(value)
    return ""
