"""The search over ``tool_index``: a query read, its words ranked by bm25, the best reranked by what a
gateway knows of its fleet.

A search (``search``) reads the query (``queries.parse_query``: words, light stems, the
operation asked, qualifiers after a preposition, synonyms), looks its words up in ``tool_terms``
(``vocabulary``: which upstreams they name, how rare each is in tool names), ranks the tools
matching any of them by bm25 and reranks the best ``WINDOW`` (``_rerank``): by the share of the
query's words the tool's name says, how surely the query names the tool's upstream, the share of
the name's object words the query says, and whether the name's operation fits the query's. The
bm25 is FTS5's, computed from a per-connection ``bm25.Snapshot`` of ``tool_terms`` and the FTS
columns' postings (made again when the index changes) rather than by a ``MATCH`` query.

The bm25 column weights (``documents.WEIGHTS``) and the rerank's constants below were tuned with
``bench/tune_search.py`` on query sets written apart from the search (docs/dataset.md); the
held-out sets of ``bench/tool_search.py`` say which were never tuned on.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import apsw

from harness.search.bm25 import Snapshot, snapshot
from harness.search.documents import LABEL
from harness.search.hits import ToolHit
from harness.search.queries import MAX_QUERY_WORDS, Query, parse_query
from harness.search.words import verb_match

__all__ = ["Vocabulary", "match_expression", "query_words", "search", "vocabulary"]


def query_words(query: str) -> list[str]:
    """The words a plain FTS5 search of ``query`` looks for (the skill library's): the terms of
    ``queries.parse_query``, its joined words and its verb (a tool search matches that by
    operation instead, and looks for joined words only when a tool name says them)."""
    parsed = parse_query(query)
    words = [*parsed.terms, *parsed.joined, *([parsed.verb] if parsed.verb else [])]
    return list(dict.fromkeys(words))[:MAX_QUERY_WORDS]


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 query matching any of ``words`` (each a quoted string, so never FTS5 syntax)."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


WINDOW = 48
"""How many bm25 matches are reranked (at least; more when a filter leaves fewer than ``k``)."""

NAME_BOOST = 0.75
"""The weight of the share of the query's words (by idf) that the tool's name says."""

PRODUCT_BOOST = 0.75
"""The weight of how surely the query names the tool's upstream (0 to 1)."""

PRODUCT_SHARPNESS = 10.0
"""How fast a word's naming fades as other upstreams' tool names use it too."""

SHARED_SHARPNESS = 1.1
"""The same for a word only the upstream's tool names share (``task`` for asana is any task
manager's word; ``kubectl`` only kubernetes')."""

PRECISION_BOOST = 0.15
"""The weight of the share of the tool name's object words that the query says."""

EMPTY_PRECISION = 1.33
"""The precision of a name without object words (``fetch``, ``jira_put``)."""

SUMMARY_CREDIT = 0.67
"""What a query word said only by the first sentence of the description counts, against the name."""

OPERATION_BOOST = 0.1
"""The weight of ``words.operation_match`` (-0.5 to 1)."""

PLURAL_BOOST = 0.03
"""Added when the tool's name holds a word the query says in the plural, as the query says it."""

BM25_BOOST = 1.0
"""The weight of the tool's bm25 over the window's best."""

UNNAMED_RARITY = 1.5
"""The weight, against idf in tool names, of a query word no tool name holds (``closing`` of a share
price): it counts in the query's whole, so a common name word alone does not say all of it."""


@dataclass(frozen=True)
class Vocabulary:
    """What the index says of a query's words: which upstreams they name, how rare in tool names."""

    named: dict[str, float]
    """Upstream key → how surely the query names it (0 to 1)."""

    idf: dict[str, float]
    """Stem → log(tools / tools whose names hold it), for the stems some name holds."""


def vocabulary(conn: apsw.Connection, stems: Sequence[str], own: Collection[str] = ()) -> Vocabulary:
    """Look the query's stems up in ``tool_terms`` (as the connection's ``bm25.Snapshot`` holds it).

    Only the query's ``own`` words (not their synonyms) name upstreams. A word names the upstreams
    whose product word it is, as surely as their tools (those whose names hold it, for a word
    their names share) outnumber the other tools whose names use it, to the power
    ``PRODUCT_SHARPNESS`` (``linear`` names linear: 1; ``search`` names brave-search hardly), shared
    out when it names several (``jira``: atlassian and jira, 0.7 each).
    """
    return _vocabulary(snapshot(conn), stems, own)


def _vocabulary(snap: Snapshot, stems: Sequence[str], own: Collection[str]) -> Vocabulary:
    named: dict[str, float] = {}
    idf: dict[str, float] = {}
    total = snap.total
    for word in sorted(set(stems)):
        entries = snap.terms.get(word)
        if entries is None:
            continue
        df = sum(n for _, n, _, _ in entries)
        if df:
            idf[word] = math.log(1.0 + total / df)
        owners = [(u, size if p == LABEL else n) for u, n, p, size in entries if p]
        if not owners or word not in own:
            continue
        owned = sum(n for _, n in owners)
        if owned <= 0:
            continue  # an upstream listing no tools names none
        others = sum(n for _, n, p, _ in entries if not p)
        sharpness = PRODUCT_SHARPNESS if any(p == LABEL for _, _, p, _ in entries) else SHARED_SHARPNESS
        share = (owned / (owned + others)) ** sharpness / len(owners) ** 0.5
        for upstream, _ in owners:
            named[upstream] = min(1.0, named.get(upstream, 0.0) + share)
    return Vocabulary(named, idf)


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
    with no word characters, returns []. The tools matching any of its words are ranked by bm25 and
    the best ``WINDOW`` reranked (``_rerank``). The filters run on the ranked matches, widening the
    window until ``k`` permitted tools are found or the matches run out (never short of what is
    permitted). ``weights`` overrides the column weights (for tuning; the default is the table's
    ``rank``).

    The bm25 scores are FTS5's own, computed from the connection's ``bm25.Snapshot`` of the index (its
    postings, as the table's tokenizer reads each row) instead of by a ``MATCH`` query, which spent
    most of a search scoring every match in five columns; a query word the tokenizer does not read
    as one token, or ``weights``, runs the ``MATCH`` query.
    """
    parsed = parse_query(query)
    if not parsed.terms or k <= 0 or (allowed is not None and not allowed):
        return []
    snap = snapshot(conn)
    vocab = _vocabulary(snap, parsed.stems, frozenset(parsed.names))
    terms = [*parsed.terms, *(w for w in parsed.joined if w in vocab.idf)][:MAX_QUERY_WORDS]
    ranked = snap.bm25(terms) if weights is None else None
    if ranked is None:
        order = "rank" if weights is None else f"bm25(tool_fts, {', '.join(str(float(w)) for w in weights)})"
        sql = f"SELECT rowid, {order} AS score FROM tool_fts WHERE tool_fts MATCH ? ORDER BY score, rowid"
        sql += " LIMIT ?"
        expression = match_expression(terms)

        def fetch(window: int) -> list[tuple[int, float]]:
            return [(rowid, -float(score)) for rowid, score in conn.execute(sql, (expression, window))]
    else:
        everything = ranked

        def fetch(window: int) -> list[tuple[int, float]]:
            return everything[:window]

    names = None if allowed is None else _as_set(allowed)
    keys = None if upstreams is None else _as_set(upstreams)
    window = max(WINDOW, 4 * k)
    while True:
        rows = fetch(window)
        tools = _tools(conn, [rowid for rowid, _ in rows])
        hits = [
            (tools[rowid], score)
            for rowid, score in rows
            if (names is None or tools[rowid].name in names)
            and (keys is None or tools[rowid].upstream in keys)
        ]
        if len(hits) >= k or len(rows) < window:
            break
        # The policy filter runs on the ranked matches, widening the window until k allowed tools
        # are found or the matches run out: never short, and a set lookup per match instead of a
        # per-search SQL index of every allowed name (which cost 1-4 ms at 1,374-5,000 tools).
        window *= 8
    if not hits:
        return []
    return [
        ToolHit(tool.name, tool.upstream, tool.tool, tool.description, tool.schema_json, score)
        for tool, score in _rerank(parsed, vocab, hits)[:k]
    ]


@dataclass(frozen=True, slots=True)
class _Tool:
    """What the rerank reads of an indexed tool, and what a hit returns (a row's content never
    changes: a catalogue's rows are new rows, their ids from its event's position)."""

    rowid: int
    name: str
    upstream: str
    tool: str
    description: str
    schema_json: str
    operation: str
    verb: str
    says: frozenset[str]
    objects: frozenset[str]
    summary: frozenset[str]
    words: frozenset[str]


MAX_CACHED_TOOLS = 100_000
"""Per connection; the cache starts over when a new one would pass it."""
_TOOLS: weakref.WeakKeyDictionary[apsw.Connection, dict[int, _Tool]] = weakref.WeakKeyDictionary()
_TOOL_SQL = (
    "SELECT rowid, name, upstream, tool, description, input_schema, operation, verb,"
    " name_stems, object_stems, summary_stems, tool_words FROM tool_index WHERE rowid IN ({marks})"
)


def _tools(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, _Tool]:
    """The connection's cache of ``_Tool`` s, holding (at least) these rows."""
    cache = _TOOLS.get(conn)
    if cache is None:
        cache = _TOOLS[conn] = {}
    missing = [rowid for rowid in rowids if rowid not in cache]
    if not missing:
        return cache
    if len(cache) + len(missing) > MAX_CACHED_TOOLS:
        cache.clear()
    for start in range(0, len(missing), 4096):
        chunk = missing[start : start + 4096]
        for row in conn.execute(_TOOL_SQL.format(marks=", ".join("?" * len(chunk))), chunk):
            cache[row[0]] = _Tool(*row[:8], *(_stem_set(text) for text in row[8:]))
    return cache


def _stem_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass
class _Asked:
    """The words of a query a tool name can say, each a bit with its weight (idf in tool names,
    less after a preposition); the stems that say them (their own, one-word synonyms); runs of
    stems that say one together (two-word synonyms); the verb's bit; every stem the query says."""

    weights: list[float]
    bits_of: dict[str, int]
    runs: list[tuple[frozenset[str], int]]
    verb_bit: int
    says: frozenset[str]

    @classmethod
    def of(cls, parsed: Query, idf: dict[str, float]) -> _Asked:
        """What ``parsed`` asks a tool name to say."""
        asked = cls([], {}, [], 0, frozenset(parsed.stems))
        for word in parsed.words:
            rarity = max(
                [idf.get(word.stem, 0.0)] + [min(idf.get(s, 0.0) for s in alt) for alt in word.alternatives]
            )
            if rarity <= 0 and not word.operation:
                if UNNAMED_RARITY <= 0:
                    continue
                rarity = UNNAMED_RARITY
            bit = 1 << len(asked.weights)
            asked.weights.append((rarity or 1.0) * word.weight)
            for s in {word.stem, *(alt[0] for alt in word.alternatives if len(alt) == 1)}:
                asked.bits_of[s] = asked.bits_of.get(s, 0) | bit
            asked.runs.extend((frozenset(alt), bit) for alt in word.alternatives if len(alt) > 1)
            if word.operation:
                asked.verb_bit = bit
        return asked

    def weigher(self) -> Callable[[int], float]:
        """The share of the query's weight some of its words' bits carry (memoised)."""
        total = sum(self.weights) or 1.0
        memo: dict[int, float] = {0: 0.0}

        def weigh(bits: int) -> float:
            w = memo.get(bits)
            if w is None:
                w = memo[bits] = sum(x for i, x in enumerate(self.weights) if bits >> i & 1) / total
            return w

        return weigh


def _rerank(
    parsed: Query, vocab: Vocabulary, hits: Sequence[tuple[_Tool, float]]
) -> list[tuple[_Tool, float]]:
    """The window's tools, best first, each with its reranked score::

    BM25_BOOST * bm25 / the window's best bm25
    + NAME_BOOST * the share of the query's words its name (or, for SUMMARY_CREDIT of a word,
      its description's first sentence) says, by idf in tool names, qualifiers half
    + PRECISION_BOOST * the share of its name's object words the query says
    + PRODUCT_BOOST * how surely the query names its upstream
    + OPERATION_BOOST * how well its name's operation fits the query's
    + PLURAL_BOOST if its name says a word the way the query does in the plural
    """
    named = vocab.named
    asked = _Asked.of(parsed, vocab.idf)
    bits_of, runs, verb_bit, says = asked.bits_of, asked.runs, asked.verb_bit, asked.says
    stems = frozenset(bits_of)
    weigh = asked.weigher()
    plurals = frozenset(parsed.plurals)
    operation = parsed.operation
    if operation is None and parsed.words and parsed.words[0].stem not in vocab.idf and not named:
        operation = ""  # it starts with a word no tool name uses: a verb we do not know, not a thing
    fits: dict[str, float] = {}  # by the tool's verb
    bm25_boost = BM25_BOOST / (hits[0][1] or 1.0)
    scored = []
    for tool, bm25 in hits:
        by_name = verb_bit if verb_bit and tool.operation == operation else 0
        for s in tool.says & stems:
            by_name |= bits_of[s]
        by_summary = 0
        for s in tool.summary & stems:
            by_summary |= bits_of[s]
        for run, bit in runs:
            if run <= tool.says:
                by_name |= bit
            elif run <= tool.summary:
                by_summary |= bit
        objects = tool.objects
        fit = fits.get(tool.verb)
        if fit is None:
            fit = fits[tool.verb] = verb_match(operation, parsed.verb, tool.operation, tool.verb)
        value = (
            bm25_boost * bm25
            + NAME_BOOST * (weigh(by_name) + SUMMARY_CREDIT * weigh(by_summary & ~by_name))
            + PRECISION_BOOST * (len(objects & says) / len(objects) if objects else EMPTY_PRECISION)
            + PRODUCT_BOOST * named.get(tool.upstream, 0.0)
            + OPERATION_BOOST * fit
            + (PLURAL_BOOST if plurals and not plurals.isdisjoint(tool.words) else 0.0)
        )
        scored.append((tool, value))
    scored.sort(key=_SCORE, reverse=True)  # stable: equal scores keep the bm25 order
    return scored


_SCORE = operator.itemgetter(1)


def _as_set(items: Collection[str]) -> Collection[str]:
    return items if isinstance(items, frozenset | set) else frozenset(items)
