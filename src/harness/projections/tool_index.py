"""The ``tool_index`` projection: every known tool, searchable with FTS5 and ranked by bm25.

``tool_index`` (the content table) holds one row per tool of each upstream's latest catalogue;
``tool_fts`` is an external-content FTS5 table over five of its columns:

==================  ==========================================================  ======
column              what                                                        weight
==================  ==========================================================  ======
``tool_words``      the tool's own name, and the name split into words           see
``upstream_words``  the upstream's NAME split into words                         ``WEIGHTS``
``description``     the tool's description
``params``          parameter names, and each split into words
``param_docs``      parameter descriptions and enum values
==================  ==========================================================  ======

Names are split at ``_``, ``-``, ``.``, spaces, camelCase humps and letter/digit changes
(``getPullRequest`` → ``get pull request``). The tokenizer is ``porter unicode61`` (stemmed,
diacritics folded). Weights were tuned on ``bench/data/tool_queries.json`` (``bench/tool_search.py``).
A query is read as words (``query_words``: stop words dropped, adjacent words also joined, a few
synonyms added) and matches any of them.

A catalogue event replaces every earlier entry of its upstream, so a tool the upstream no longer
lists leaves the index.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from harness.events import Envelope, ToolCatalogFetched
from harness.naming import exposed_name, upstream_name
from harness.projections.base import Folding

WEIGHTS: tuple[float, ...] = (24.0, 1.5, 1.0, 2.25, 0.25)
"""bm25 weights of tool_words, upstream_words, description, params, param_docs (in that order).

They are stored in the table's ``rank`` configuration: changing them means bumping ``version``."""

FTS_COLUMNS: tuple[str, ...] = ("tool_words", "upstream_words", "description", "params", "param_docs")

_DDL = f"""
CREATE TABLE tool_index(
    rowid          INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,  -- the exposed (namespaced) name an agent calls
    upstream       TEXT NOT NULL,
    tool           TEXT NOT NULL,  -- the upstream's own name
    description    TEXT NOT NULL,  -- untrimmed
    input_schema   TEXT NOT NULL,  -- the inputSchema as received, JSON text
    tool_words     TEXT NOT NULL,
    upstream_words TEXT NOT NULL,
    params         TEXT NOT NULL,
    param_docs     TEXT NOT NULL,
    position       INTEGER NOT NULL  -- the catalogue event it came from
);
CREATE INDEX tool_index_name ON tool_index(name);
CREATE INDEX tool_index_upstream ON tool_index(upstream);
CREATE VIRTUAL TABLE tool_fts USING fts5(
    {", ".join(FTS_COLUMNS)},
    content='tool_index', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO tool_fts(tool_fts, rank) VALUES ('rank', 'bm25({", ".join(str(w) for w in WEIGHTS)})');
"""

_COLS = ", ".join(FTS_COLUMNS)
_FTS_DELETE_UPSTREAM = (
    f"INSERT INTO tool_fts(tool_fts, rowid, {_COLS}) SELECT 'delete', rowid, {_COLS}"
    " FROM tool_index WHERE upstream = ?"
)
_INSERT = (
    "INSERT INTO tool_index(rowid, name, upstream, tool, description, input_schema,"
    " tool_words, upstream_words, params, param_docs, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
MAX_TOOLS_PER_CATALOG = 65_536
"""A row's id is ``position * MAX_TOOLS_PER_CATALOG + index``: the same live and after any replay."""
_FTS_INSERT = f"INSERT INTO tool_fts(rowid, {_COLS}) SELECT rowid, {_COLS} FROM tool_index WHERE upstream = ?"

_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])")
_NON_WORD = re.compile(r"[\W_]+")


def split_words(text: str) -> list[str]:
    """Lower-case words of an identifier or a phrase: ``getPullRequest_v2`` → get pull request v 2."""
    return [w.lower() for w in _NON_WORD.split(_HUMPS.sub(" ", text)) if w]


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


def index_row(row: ToolRow, position: int, index: int) -> tuple[Any, ...]:
    """The ``tool_index`` row of the ``index``-th tool of the catalogue event at ``position``."""
    params, param_docs = _param_texts(row.input_schema)
    return (
        position * MAX_TOOLS_PER_CATALOG + index,
        exposed_name(row.upstream, row.tool),
        row.upstream,
        row.tool,
        row.description,
        json.dumps(row.input_schema, ensure_ascii=False, separators=(",", ":")),
        _name_text(row.tool),
        " ".join(split_words(upstream_name(row.upstream))),
        params,
        param_docs,
        position,
    )


class ToolIndexProjection(
    Folding, name="tool_index", version=1, handles={ToolCatalogFetched.STORED_NAME}, ddl=_DDL
):
    """Folds ``upstream.tool_catalog_fetched`` events into ``tool_index`` and ``tool_fts``."""

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Replace each upstream's entries by its catalogue, one event at a time, in order."""
        for env in envelopes:
            ev = env.event
            assert isinstance(ev, ToolCatalogFetched)
            tools = catalog_tools(ev.upstream, ev.tools_json)
            if tools is None:
                continue  # not a JSON array: keep what the upstream listed before
            cursor.execute(_FTS_DELETE_UPSTREAM, (ev.upstream,))
            cursor.execute("DELETE FROM tool_index WHERE upstream = ?", (ev.upstream,))
            rows = [index_row(t, env.position, i) for i, t in enumerate(tools[:MAX_TOOLS_PER_CATALOG])]
            cursor.executemany(_INSERT, rows)
            cursor.execute(_FTS_INSERT, (ev.upstream,))

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Nothing: retention keeps each upstream's latest catalogue, the only one indexed."""


# ------------------------------------------------------------------------------------------ search


@dataclass(frozen=True)
class ToolHit:
    """One search result. ``score`` is bm25's relevance (higher is better)."""

    name: str
    upstream: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    score: float


_STOPWORDS_TEXT = """a an the and or but of to in on at by for with from into onto about as via is are was
were be been do does did how i me my we our us you your it its this that these those what which who
whom can could should would will shall may might must please want need some any all there here then
than so such just also very let lets way thing things tool tools"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
"""Words dropped from a query (unless nothing else is left): they match everywhere and rank noise."""

MAX_QUERY_WORDS = 32


# how agents ask: how tool names and descriptions say it (one "word: alternatives" a line)
_SYNONYMS_TEXT = """
open: create
make: create
new: create
add: create
write: create update
remove: delete
erase: delete
drop: delete
change: update
modify: update
edit: update
rename: move
show: get list
display: get list
view: get
fetch: get
retrieve: get
read: get
find: search
look: search
lookup: search
ticket: issue
bug: issue
pr: pull request
mr: merge request
folder: directory
dir: directory
email: gmail mail message
mail: gmail email message
meeting: event
appointment: event
now: current
today: current
run: execute
execute: run
done: complete close transition
finish: complete close
complete: close
picture: image screenshot
photo: image
go: navigate
visit: navigate
url: navigate link
webpage: page web
website: site web
send: post
history: log
kill: terminate
graph: chart
plot: chart
ticker: stock symbol
share: stock
"""
SYNONYMS: dict[str, tuple[str, ...]] = {
    word: tuple(alternatives.split())
    for word, _, alternatives in (line.partition(": ") for line in _SYNONYMS_TEXT.strip().splitlines())
}
"""Query words that also search for the words tools usually use for the same thing."""


def query_words(query: str) -> list[str]:
    """The words a query searches for: split like names, stopwords dropped, deduplicated, capped.

    Adjacent words are also joined (``on call`` → ``oncall``), and common verbs and nouns are
    widened by ``SYNONYMS`` (``open`` → ``create``).
    """
    raw = split_words(query)
    kept = [w for w in raw if w not in STOPWORDS] or raw
    words = list(kept)
    words += [
        a + b
        for a, b in itertools.pairwise(raw)
        if len(a) + len(b) >= 5 and (a not in STOPWORDS or b not in STOPWORDS)
    ]
    for w in kept:
        words.extend(SYNONYMS.get(w, ()))
    return list(dict.fromkeys(words))[:MAX_QUERY_WORDS]


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 query matching any of ``words`` (each a quoted string, so never FTS5 syntax)."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


_HIT_COLUMNS = "t.name, t.upstream, t.tool, t.description, t.input_schema"


def search(
    conn: apsw.Connection,
    query: str,
    *,
    k: int = 10,
    allowed: Collection[str] | None = None,
    upstreams: Collection[str] | None = None,
    weights: Sequence[float] | None = None,
) -> list[ToolHit]:
    """The ``k`` tools best matching ``query``, best first; only names in ``allowed`` and tools of
    the upstream keys in ``upstreams``, if given (two projects' upstreams of one NAME list tools of
    the same names: a harness finds its own project's).

    The query is read as plain words (any FTS5 syntax in it is just text); an empty query, or one
    with no word characters, returns []. The filters run on the ranked matches, widening the window
    until ``k`` permitted tools are found or the matches run out (never short of what is permitted).
    ``weights`` overrides the column weights (for tuning; the default is the table's ``rank``).
    """
    words = query_words(query)
    if not words or k <= 0 or (allowed is not None and not allowed):
        return []
    order = "rank" if weights is None else f"bm25(tool_fts, {', '.join(str(float(w)) for w in weights)})"
    sql = (
        f"SELECT {_HIT_COLUMNS}, f.score FROM"
        f" (SELECT tool_fts.rowid AS rowid, {order} AS score FROM tool_fts WHERE tool_fts MATCH ?"
        " ORDER BY score, rowid LIMIT ?) AS f"
        " JOIN tool_index AS t ON t.rowid = f.rowid ORDER BY f.score, f.rowid"
    )
    expression = match_expression(words)
    if allowed is None and upstreams is None:
        return [_hit(row) for row in conn.execute(sql, (expression, k))]
    # The policy filter runs on the ranked matches, widening the window until k allowed tools are
    # found or the matches run out: never short, and a set lookup per match instead of a per-search
    # SQL index of every allowed name (which cost 1-4 ms at 1,374-5,000 tools).
    names = None if allowed is None else _as_set(allowed)
    keys = None if upstreams is None else _as_set(upstreams)
    window = max(4 * k, 32)
    while True:
        rows = conn.execute(sql, (expression, window)).fetchall()
        hits = [
            row for row in rows if (names is None or row[0] in names) and (keys is None or row[1] in keys)
        ]
        if len(hits) >= k or len(rows) < window:
            return [_hit(row) for row in hits[:k]]
        window *= 8


def _as_set(items: Collection[str]) -> Collection[str]:
    return items if isinstance(items, frozenset | set) else frozenset(items)


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
    return ToolHit(name, upstream, tool, description, json.loads(schema), -float(score))


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
