"""Reading tools back from the ``tool_index`` table: a search result (``ToolHit``), every tool, one
by name."""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

__all__ = ["ToolHit", "all_tools", "lookup"]


@dataclass(frozen=True)
class ToolHit:
    """One search result. ``score`` is its relevance as ranked (higher is better; the best match
    is about 1, more when the query names its upstream)."""

    name: str
    upstream: str
    tool: str
    description: str
    schema_json: str = field(repr=False)
    """The ``inputSchema`` as indexed, JSON text."""
    score: float

    @property
    def input_schema(self) -> dict[str, Any]:
        """The tool's ``inputSchema``, parsed on each read (a fresh dict: the live gateway reads only
        names, so a search parses no schema)."""
        schema: dict[str, Any] = json.loads(self.schema_json)
        return schema


_HIT_COLUMNS = "t.name, t.upstream, t.tool, t.description, t.input_schema"


@functools.lru_cache(maxsize=64)
def _frozen_names_json(names: frozenset[str]) -> str:
    return json.dumps(list(names))


def _names_json(names: Collection[str]) -> str:
    """``names`` as a JSON array; cached for a frozenset (a policy's allowed set is reused per search)."""
    if isinstance(names, frozenset):
        return _frozen_names_json(names)
    return json.dumps(list(names))


def _hit(row: Sequence[Any]) -> ToolHit:
    name, upstream, tool, description, schema, score = row
    return ToolHit(name, upstream, tool, description, schema, -float(score))


def all_tools(conn: apsw.Connection, *, allowed: Collection[str] | None = None) -> list[ToolHit]:
    """Every indexed tool (only ``allowed`` names if given), by name; ``score`` is 0."""
    sql = f"SELECT {_HIT_COLUMNS}, 0.0 FROM tool_index AS t"
    args: list[Any] = []
    if allowed is not None:
        sql += " WHERE t.name IN (SELECT value FROM json_each(?))"
        args.append(_names_json(allowed))
    return [_hit(row) for row in conn.execute(sql + " ORDER BY t.name, t.rowid", args)]


def lookup(conn: apsw.Connection, name: str) -> ToolHit | None:
    """The indexed tool with this exposed name, or None."""
    row = conn.execute(
        f"SELECT {_HIT_COLUMNS}, 0.0 FROM tool_index AS t WHERE t.name = ? ORDER BY t.rowid LIMIT 1", (name,)
    ).fetchone()
    return _hit(row) if row else None
