"""Events to stored JSON text and back, with read-time upcasters for older versions."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.events.base import Event, event_class

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""(stored name, from version) → pure function returning the data at version + 1."""


def encode(event: Event) -> str:
    """Canonical JSON text of an event's fields: declaration order, compact, UTF-8 kept."""
    return event.model_dump_json()


def decode(name: str, version: int, data: str) -> Event:
    """Rebuild an event from its stored row, upcasting older versions to the current class."""
    cls = event_class(name)
    fields: dict[str, Any] = json.loads(data)
    while version < cls.VERSION:
        fields = UPCASTERS[(name, version)](fields)
        version += 1
    if version != cls.VERSION:
        raise ValueError(f"event {name!r} v{version} is newer than this code (v{cls.VERSION})")
    return cls.model_validate(fields)
