"""Events to stored JSON text and back, with read-time upcasters for older versions."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from harness.events.base import Event, event_class
from harness.naming import called_name

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""(stored name, from version) → pure function returning the data at version + 1.

Register one per version bump. Stored rows are never rewritten; old versions are upcast each time
they are read.
"""


def _with_unknown_harness(fields: dict[str, Any]) -> dict[str, Any]:
    """v1 session events did not say whose session it was: v2 adds ``harness`` (null: unknown)."""
    return {**fields, "harness": fields.get("harness")}


UPCASTERS[("session.initialized", 1)] = _with_unknown_harness
UPCASTERS[("session.closed", 1)] = _with_unknown_harness
UPCASTERS[("tool_call.completed", 1)] = dict  # v2 lets args_hash be null; every v1 row has one
UPCASTERS[("tool_search.completed", 1)] = dict


def _with_cut_and_call_site(fields: dict[str, Any]) -> dict[str, Any]:
    """v3 says whether ``args`` was cut and how large the arguments were (a v2 row was cut when it
    ends with the old marker; its size is unknown), and how the agent asked: the name it called (v2:
    the naming rule's, a gateway tool's own name), whether through ``call_tool`` and the request id
    (v2: unknown, null)."""
    args = fields.get("args")
    cut = isinstance(args, str) and args.endswith("…[truncated]")
    return {
        **fields,
        "args_truncated": cut,
        "args_bytes": None,
        "exposed_name": called_name(fields["upstream"], fields["tool"]),
        "via_call_tool": None,
        "request_id": None,
    }


UPCASTERS[("tool_call.completed", 2)] = _with_cut_and_call_site
UPCASTERS[("harness.spawned", 1)] = lambda fields: {**fields, "restarted_run_id": None}


def encode(event: Event) -> str:
    """Canonical JSON text of an event's fields: declaration order, compact, UTF-8 kept.

    The same text as ``event.model_dump_json()``, without its per-call argument handling. An event
    whose fields are all flat (``FLAT_FIELDS``: strings, numbers, booleans, null) is written by
    orjson from its field dict, at under half the cost (bench/README.md); both write the same text
    (compact, shortest float form, UTF-8 unescaped), which a test checks on arbitrary values. What
    orjson refuses (an integer beyond 64 bits, a lone surrogate) goes to pydantic.
    """
    if event.FLAT_FIELDS:
        try:
            return orjson.dumps(event.__dict__).decode()
        except TypeError:
            pass
    return type(event).__pydantic_serializer__.to_json(event).decode()


def upcast(name: str, version: int, fields: dict[str, Any]) -> dict[str, Any]:
    """The stored fields of ``name`` at ``version`` brought to the current class's version."""
    cls = event_class(name)
    while version < cls.VERSION:
        fields = UPCASTERS[(name, version)](fields)
        version += 1
    if version != cls.VERSION:
        raise ValueError(f"event {name!r} v{version} is newer than this code (v{cls.VERSION})")
    return fields


def decode(name: str, version: int, data: str) -> Event:
    """Rebuild an event from its stored row, upcasting older versions to the current class.

    The current version is validated straight from the JSON text (pydantic's parser, cheaper than
    ``json.loads`` alone), which is what makes replay fast.
    """
    cls = event_class(name)
    if version == cls.VERSION:
        return cls.model_validate_json(data)
    return cls.model_validate(upcast(name, version, json.loads(data)))
