"""The event base class and the registry of stored names.

An event is an immutable fact. Each class declares a stable stored name (``STORED_NAME``) and a
version (``VERSION``); neither derives from the module path, and a stored name is never reused.
"""

from __future__ import annotations

from typing import ClassVar

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


_CORRELATING = ("session_id", "run_id", "upstream")
_correlating_fields: dict[type[Event], tuple[str, ...]] = {}


def correlation_of(event: Event) -> str:
    """What an event correlates with: its session, else its run, else its upstream, else ''."""
    cls = type(event)
    attrs = _correlating_fields.get(cls)
    if attrs is None:
        attrs = _correlating_fields[cls] = tuple(a for a in _CORRELATING if a in cls.model_fields)
    fields = event.__dict__
    for attr in attrs:
        value = fields[attr]
        if value:
            return str(value)
    return ""
