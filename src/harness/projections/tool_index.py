"""The ``tool_index`` projection: every known tool, in the tables its search reads
(``tool_ranking.search``: FTS5's bm25, then a rerank by what a gateway knows of its fleet).

``tool_index`` (the content table) holds one row per tool of each upstream's latest catalogue;
``tool_fts`` is an external-content FTS5 table over five of its columns:

==================  ============================================================  ===========
column              what                                                          weight
==================  ============================================================  ===========
``tool_words``      the tool's own name, and the name split into words             ``WEIGHTS``
``product_words``   the words that name its upstream (``tool_words.label_words``:
                    its NAME's and ``serverInfo.name``'s; ``shared_words``: those
                    most of its tool names share, ``jira`` for atlassian)
``description``     the tool's description
``params``          parameter names, and each split into words
``param_docs``      parameter descriptions and enum values
==================  ============================================================  ===========

Names are split at ``_``, ``-``, ``.``, spaces, camelCase humps and letter/digit changes
(``getPullRequest`` → ``get pull request``). The tokenizer is ``porter unicode61`` (stemmed,
diacritics folded). Each row also keeps, for the rerank, its name's ``operation`` and ``verb``
(``duplicateIssue``: create, duplicate), its words lightly stemmed (``name_stems``), those that are
neither verbs nor product words (``object_stems``) and the stems of the description's first
sentence (``summary_stems``). ``tool_terms`` counts, per upstream, its tools whose names hold each
word and marks its product words (2: a label, 1: shared by its names); ``tool_upstreams`` keeps
each upstream's server name (a catalogue refreshed after ``list_changed`` comes without one) and
tool count.

A catalogue event replaces every earlier entry of its upstream, so a tool the upstream no longer
lists leaves the index.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from harness.events import Envelope, ToolCatalogFetched
from harness.naming import exposed_name, upstream_name
from harness.projections.base import Folding
from harness.projections.tool_words import (
    OPERATIONS,
    STOPWORDS,
    label_words,
    name_operation,
    shared_words,
    split_words,
    stem,
)

__all__ = [
    "FTS_COLUMNS",
    "WEIGHTS",
    "ToolHit",
    "ToolIndexProjection",
    "ToolRow",
    "all_tools",
    "catalog_tools",
    "index_row",
    "lookup",
]

WEIGHTS: tuple[float, ...] = (48.0, 0.56, 2.66, 1.69, 0.88)
"""bm25 weights of tool_words, product_words, description, params, param_docs (in that order).

All but the name's were tuned with the rerank's constants on 900 queries written apart from the
search (``heldout-4``..``-6`` of ``bench/tool_search.py``; docs/dataset.md). They are stored in the
table's ``rank`` configuration: changing them means bumping ``version``."""

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The FTS5 tokenizer of ``tool_fts`` (the search reads rows and words with it too)."""

FTS_COLUMNS: tuple[str, ...] = ("tool_words", "product_words", "description", "params", "param_docs")

_DDL = f"""
CREATE TABLE tool_index(
    rowid          INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,  -- the exposed (namespaced) name an agent calls
    upstream       TEXT NOT NULL,
    tool           TEXT NOT NULL,  -- the upstream's own name
    description    TEXT NOT NULL,  -- untrimmed
    input_schema   TEXT NOT NULL,  -- the inputSchema as received, JSON text
    tool_words     TEXT NOT NULL,
    product_words  TEXT NOT NULL,
    params         TEXT NOT NULL,
    param_docs     TEXT NOT NULL,
    operation      TEXT NOT NULL,  -- the name's canonical operation (create, read, ...) or ''
    verb           TEXT NOT NULL,  -- the name's word that says it (duplicate, create, ...) or ''
    name_stems     TEXT NOT NULL,  -- the name's words, lightly stemmed
    object_stems   TEXT NOT NULL,  -- those that are neither verbs, stop words nor product words
    summary_stems  TEXT NOT NULL,  -- the words of the description's first sentence, lightly stemmed
    position       INTEGER NOT NULL  -- the catalogue event it came from
);
CREATE INDEX tool_index_name ON tool_index(name);
CREATE INDEX tool_index_upstream ON tool_index(upstream);
CREATE VIRTUAL TABLE tool_fts USING fts5(
    {", ".join(FTS_COLUMNS)},
    content='tool_index', content_rowid='rowid',
    tokenize='{TOKENIZE}'
);
INSERT INTO tool_fts(tool_fts, rank) VALUES ('rank', 'bm25({", ".join(str(w) for w in WEIGHTS)})');
CREATE TABLE tool_terms(
    word     TEXT NOT NULL,     -- a word of tool names or a product word, lightly stemmed
    upstream TEXT NOT NULL,
    tools    INTEGER NOT NULL,  -- its tools whose names hold the word (all of them for a product word)
    product  INTEGER NOT NULL,  -- 1: a word that names the upstream
    PRIMARY KEY (word, upstream)
) WITHOUT ROWID;
CREATE TABLE tool_upstreams(
    upstream    TEXT PRIMARY KEY,
    server_name TEXT NOT NULL,  -- the latest non-empty serverInfo.name
    tool_count  INTEGER NOT NULL
);
"""

_COLS = ", ".join(FTS_COLUMNS)
_FTS_DELETE_UPSTREAM = (
    f"INSERT INTO tool_fts(tool_fts, rowid, {_COLS}) SELECT 'delete', rowid, {_COLS}"
    " FROM tool_index WHERE upstream = ?"
)
_INSERT = (
    "INSERT INTO tool_index(rowid, name, upstream, tool, description, input_schema,"
    " tool_words, product_words, params, param_docs, operation, verb, name_stems, object_stems,"
    " summary_stems, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
MAX_TOOLS_PER_CATALOG = 65_536
"""A row's id is ``position * MAX_TOOLS_PER_CATALOG + index``: the same live and after any replay."""
_FTS_INSERT = f"INSERT INTO tool_fts(rowid, {_COLS}) SELECT rowid, {_COLS} FROM tool_index WHERE upstream = ?"


def _name_text(name: str) -> str:
    words = split_words(name)
    whole = name.lower()
    return " ".join([whole, *words]) if len(words) > 1 else whole


@dataclass(frozen=True)
class ToolRow:
    """One tool as indexed (before the FTS columns are derived)."""

    upstream: str
    tool: str
    description: str
    input_schema: dict[str, Any]


def catalog_tools(upstream: str, tools_json: str) -> list[ToolRow] | None:
    """The usable tools of a catalogue: named, first occurrence of each name; None if not a list."""
    try:
        tools = json.loads(tools_json)
    except ValueError:
        return None
    if not isinstance(tools, list):
        return None
    seen: set[str] = set()
    out: list[ToolRow] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not name or name in seen:
            continue
        seen.add(name)
        description = tool.get("description")
        schema = tool.get("inputSchema")
        out.append(
            ToolRow(
                upstream,
                name,
                description if isinstance(description, str) else "",
                schema if isinstance(schema, dict) else {},
            )
        )
    return out


def _param_texts(schema: dict[str, Any]) -> tuple[str, str]:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return "", ""
    names: list[str] = []
    docs: list[str] = []
    for key, spec in props.items():
        names.append(_name_text(str(key)))
        if isinstance(spec, dict):
            for field in ("description", "title"):
                value = spec.get(field)
                if isinstance(value, str):
                    docs.append(value)
            enum = spec.get("enum")
            if isinstance(enum, list):
                docs.extend(str(v) for v in enum if isinstance(v, str | int | float))
    return " ".join(names), " ".join(docs)


def index_row(row: ToolRow, position: int, index: int, products: Sequence[str] = ()) -> tuple[Any, ...]:
    """The ``tool_index`` row of the ``index``-th tool of the catalogue event at ``position``
    (``products``: its upstream's product words)."""
    params, param_docs = _param_texts(row.input_schema)
    words = split_words(row.tool)
    stems = list(dict.fromkeys(stem(w) for w in words))
    objects = [s for s in stems if s not in OPERATIONS and s not in STOPWORDS and s not in products]
    return (
        position * MAX_TOOLS_PER_CATALOG + index,
        exposed_name(row.upstream, row.tool),
        row.upstream,
        row.tool,
        row.description,
        json.dumps(row.input_schema, ensure_ascii=False, separators=(",", ":")),
        _name_text(row.tool),
        " ".join(products),
        params,
        param_docs,
        *name_operation(words),
        " ".join(stems),
        " ".join(objects),
        " ".join(summary_stems(row.description)),
        position,
    )


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])[.!?](?:\s|$)|\n\s*\n")
SUMMARY_CHARS = 300


def summary_stems(description: str) -> list[str]:
    """The stems of a description's first sentence (at most ``SUMMARY_CHARS``), stop words left out."""
    text = description.strip()[:SUMMARY_CHARS]
    end = _SENTENCE_END.search(text)
    words = split_words(text[: end.start()] if end else text)
    return list(dict.fromkeys(stem(w) for w in words if w not in STOPWORDS))


LABEL, SHARED = 2, 1
"""``tool_terms.product``: a word of the upstream's NAME or server name; a word most of its tool
names share (``tool_words.label_words``, ``tool_words.shared_words``); 0: neither."""


def term_rows(
    upstream: str, tools: Sequence[ToolRow], labels: Iterable[str], shared: Iterable[str]
) -> list[tuple[Any, ...]]:
    """The ``tool_terms`` rows of an upstream: each name word's count of tools, product words marked
    (and counted 0 if no name holds them)."""
    counts: Counter[str] = Counter()
    for tool in tools:
        counts.update({stem(w) for w in split_words(tool.tool)})
    rows = {word: (word, upstream, n, 0) for word, n in counts.items()}
    for word in shared:
        rows[word] = (word, upstream, counts[word], SHARED)
    for word in labels:
        rows[word] = (word, upstream, counts.get(word, 0), LABEL)
    return list(rows.values())


class ToolIndexProjection(
    Folding, name="tool_index", version=3, handles={ToolCatalogFetched.STORED_NAME}, ddl=_DDL
):
    """Folds ``upstream.tool_catalog_fetched`` events into ``tool_index``, ``tool_fts``,
    ``tool_terms`` and ``tool_upstreams``.

    Version 3 stores the retuned bm25 column weights (``WEIGHTS``) in ``tool_fts``'s ``rank``."""

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Replace each upstream's entries by its catalogue, one event at a time, in order."""
        for env in envelopes:
            ev = env.event
            assert isinstance(ev, ToolCatalogFetched)
            tools = catalog_tools(ev.upstream, ev.tools_json)
            if tools is None:
                continue  # not a JSON array: keep what the upstream listed before
            tools = tools[:MAX_TOOLS_PER_CATALOG]
            server = ev.server_name
            if not server:
                row = cursor.execute(
                    "SELECT server_name FROM tool_upstreams WHERE upstream = ?", (ev.upstream,)
                ).fetchone()
                server = row[0] if row else ""
            cursor.execute(
                "INSERT OR REPLACE INTO tool_upstreams(upstream, server_name, tool_count) VALUES (?, ?, ?)",
                (ev.upstream, server, len(tools)),
            )
            labels = label_words(upstream_name(ev.upstream), server)
            shared = shared_words(t.tool for t in tools)
            products = list(dict.fromkeys(labels + shared))
            cursor.execute(_FTS_DELETE_UPSTREAM, (ev.upstream,))
            cursor.execute("DELETE FROM tool_index WHERE upstream = ?", (ev.upstream,))
            cursor.execute("DELETE FROM tool_terms WHERE upstream = ?", (ev.upstream,))
            rows = [index_row(t, env.position, i, products) for i, t in enumerate(tools)]
            cursor.executemany(_INSERT, rows)
            cursor.execute(_FTS_INSERT, (ev.upstream,))
            cursor.executemany(
                "INSERT INTO tool_terms(word, upstream, tools, product) VALUES (?, ?, ?, ?)",
                term_rows(ev.upstream, tools, labels, shared),
            )

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Nothing: retention keeps each upstream's latest catalogue, the only one indexed."""


# ---------------------------------------------------------------------------------- reading rows


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
