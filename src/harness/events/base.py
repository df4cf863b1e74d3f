"""The event base class and the registry of stored names.

An event is an immutable fact. Each class declares a stable stored name (``STORED_NAME``) and a
version (``VERSION``); neither derives from the module path, and a stored name is never reused.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

_set_slot = object.__setattr__
_new = object.__new__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
"""BaseModel's slots, set through their descriptors (a third cheaper than ``object.__setattr__``)."""


class Event(BaseModel):
    """Base of every event: a frozen pydantic model with a stored name, a version and a time."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    STORED_NAME: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1

    ts: float
    """Event time: seconds since the epoch (UTC) from the gateway clock."""

    FLAT_FIELDS: ClassVar[bool] = False
    """True on a class whose fields are all strings, numbers, booleans or null (no nested model,
    list or set): ``encode`` may then write its JSON from the field dict directly."""

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> Self:
        """The event of ``fields`` as they are, without validation: for the per-call hot path only.

        ``fields`` must hold every field, in declaration order (the stored JSON follows it), each
        value already of its declared type, as the gateway's own code computed it; the dict becomes
        the event's. What pydantic's ``model_construct`` does for such input, at a fraction of
        validation's cost (bench/README.md). A caller's tests compare its
        events with validated ones field for field and byte for byte.

        Every such event of a class shares one set of field names as its fields set (an event is
        frozen: nothing adds to it; ``model_copy`` copies it), so an event is one object for the
        garbage collector to track, not two: a burst held in the log's intake costs it half.
        """
        fields_set = _ALL_FIELDS.get(cls)
        if fields_set is None:
            fields_set = _ALL_FIELDS[cls] = set(cls.model_fields)
        event = _new(cls)
        _set_slot(event, "__dict__", fields)
        _set_fields_set(event, fields_set)
        _set_extra(event, None)
        _set_private(event, None)
        return event


_ALL_FIELDS: dict[type[Event], set[str]] = {}
"""Per class, the fields set its trusted events share (see ``Event.trusted``)."""

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
