"""The ``tool_index`` projection: every known tool, in the tables its search reads
(``harness.search.ranking.search``: FTS5's bm25, then a rerank by what a gateway knows of its fleet).

``tool_index`` (the content table) holds one row per tool of each upstream's latest catalogue;
``tool_fts`` is an external-content FTS5 table over five of its columns:

==================  ============================================================  ===========
column              what                                                          weight
==================  ============================================================  ===========
``tool_words``      the tool's own name, and the name split into words             ``WEIGHTS``
``product_words``   the words that name its upstream (``search.words.label_words``:
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
lists leaves the index. How a tool becomes a row is ``harness.search.documents``'s; reading rows
back is ``harness.search.hits``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from harness.events import Envelope, ToolCatalogFetched
from harness.naming import upstream_name
from harness.projections.base import Folding
from harness.search.documents import (
    FTS_COLUMNS,
    MAX_TOOLS_PER_CATALOG,
    TOKENIZE,
    WEIGHTS,
    catalog_tools,
    index_row,
    term_rows,
)
from harness.search.words import label_words, shared_words

__all__ = ["ToolIndexProjection"]

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
_FTS_INSERT = f"INSERT INTO tool_fts(rowid, {_COLS}) SELECT rowid, {_COLS} FROM tool_index WHERE upstream = ?"


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
