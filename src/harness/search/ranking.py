"""The search over ``tool_index``: a query read, its words ranked by bm25, the best reranked by what a
gateway knows of its fleet.

A search (``search``) reads the query (``queries.parse_query``: words, light stems, the
operation asked, qualifiers after a preposition, synonyms), looks its words up in ``tool_terms``
(``vocabulary``: which upstreams they name, how rare each is in tool names), ranks the tools
matching any of them by bm25 and reranks the best ``WINDOW`` (``_rerank``): by the share of the
query's words the tool's name says, how surely the query names the tool's upstream, the share of
the name's object words the query says, and whether the name's operation fits the query's. The
bm25 is FTS5's, computed from a per-connection ``_Snapshot`` of ``tool_terms`` and the FTS
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
from dataclasses import dataclass, field
from typing import Any, cast

import apsw

from harness.search.documents import FTS_COLUMNS, LABEL, TOKENIZE, WEIGHTS
from harness.search.hits import ToolHit
from harness.search.queries import MAX_QUERY_WORDS, Query, parse_query
from harness.search.words import verb_match

__all__ = ["Vocabulary", "match_expression", "query_words", "search", "vocabulary", "warm", "warmed"]


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
    """Look the query's stems up in ``tool_terms`` (as the connection's ``_Snapshot`` holds it).

    Only the query's ``own`` words (not their synonyms) name upstreams. A word names the upstreams
    whose product word it is, as surely as their tools (those whose names hold it, for a word
    their names share) outnumber the other tools whose names use it, to the power
    ``PRODUCT_SHARPNESS`` (``linear`` names linear: 1; ``search`` names brave-search hardly), shared
    out when it names several (``jira``: atlassian and jira, 0.7 each).
    """
    return _snapshot(conn).vocabulary(stems, own)


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

    The bm25 scores are FTS5's own, computed from the connection's ``_Snapshot`` of the index (its
    postings, as the table's tokenizer reads each row) instead of by a ``MATCH`` query, which spent
    most of a search scoring every match in five columns; a query word the tokenizer does not read
    as one token, or ``weights``, runs the ``MATCH`` query.
    """
    parsed = parse_query(query)
    if not parsed.terms or k <= 0 or (allowed is not None and not allowed):
        return []
    snapshot = _snapshot(conn)
    vocab = snapshot.vocabulary(parsed.stems, frozenset(parsed.names))
    terms = [*parsed.terms, *(w for w in parsed.joined if w in vocab.idf)][:MAX_QUERY_WORDS]
    ranked = snapshot.bm25(terms) if weights is None else None
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


# FTS5's bm25 (``fts5Bm25Function`` in SQLite's fts5_aux.c): for each phrase of the query, in order,
# score += idf * (freq * (k1 + 1)) / (freq + k1 * (1 - b + b * D / avgdl)), where freq sums the
# column weights of the phrase's instances in the row, D is the row's token count, avgdl the
# table's, and idf = log((N - hits + 0.5) / (hits + 0.5)), 1e-6 when not positive.
_BM25_K1 = 1.2
_BM25_B = 0.75
_TOKENIZER, *_TOKENIZER_ARGS = TOKENIZE.split()
_MAX_TOKEN_BYTES = 32_768
"""FTS5 cuts longer tokens short (``FTS5_MAX_TOKEN_SIZE``): a query holding one runs ``MATCH``."""

_FTS_COLS = ", ".join(FTS_COLUMNS)
_KEY_SQL = "SELECT (SELECT max(rowid) FROM tool_index), count(*), total(tool_count) FROM tool_upstreams"
"""What changes whenever the index does: a catalogue's new rows have the highest rowids (from its
event's position), one that removes rows lowers the tool count (an empty catalogue replacing an
upstream that listed none changes nothing a search reads)."""
_ALL_TERMS_SQL = (
    "SELECT t.word, t.upstream, t.tools, t.product, u.tool_count"
    " FROM tool_terms AS t JOIN tool_upstreams AS u ON u.upstream = t.upstream ORDER BY t.word, t.upstream"
)


class _Snapshot:
    """What a search reads of the index besides each tool's row, in memory, for one state of it
    (``key``): ``tool_terms`` by word, and the postings of every token of the FTS5 columns.

    ``refresh`` brings it to a new state reading only the rows it lacks (a row never changes: a
    catalogue's rows are new rows), so a catalogue refreshed costs its own rows, not the fleet's.
    It changes in place: a connection is searched from one thread at a time."""

    def __init__(self, conn: apsw.Connection, tokens: dict[str, str | None]) -> None:
        self.key: tuple[Any, ...] = ()
        self._tokens = tokens
        self._tokenize = conn.fts5_tokenizer(_TOKENIZER, list(_TOKENIZER_ARGS))
        self.terms: dict[str, list[tuple[str, int, int, int]]] = {}
        self.total = 1
        self._postings: dict[str, dict[int, float]] = {}
        self._row_tokens: dict[int, tuple[str, ...]] = {}
        self._sizes: dict[int, int] = {}
        self._tokens_total = 0
        self._rows = 0
        self._norms: dict[int, float] = {}
        self._scores: dict[str, dict[int, float]] = {}

    def refresh(self, conn: apsw.Connection, key: tuple[Any, ...]) -> None:
        """Read ``tool_terms`` again, drop the rows the index no longer holds, add its new ones."""
        self.terms = {}
        for word, upstream, tools, product, size in conn.execute(_ALL_TERMS_SQL):
            self.terms.setdefault(word, []).append((upstream, tools, product, size))
        self.total = int(key[2]) or 1
        now = {rowid for (rowid,) in conn.execute("SELECT rowid FROM tool_index")}
        for rowid in [r for r in self._row_tokens if r not in now]:
            self._drop(rowid)
        new = sorted(now - self._row_tokens.keys())
        for start in range(0, len(new), 4096):
            chunk = new[start : start + 4096]
            sql = f"SELECT rowid, {_FTS_COLS} FROM tool_index WHERE rowid IN ({', '.join('?' * len(chunk))})"
            for rowid, *texts in conn.execute(sql, chunk):
                self._add(rowid, texts)
        self._rows = len(self._sizes)
        avgdl = self._tokens_total / self._rows if self._rows else 1.0
        self._norms = {
            rowid: _BM25_K1 * (1 - _BM25_B + _BM25_B * n / avgdl) for rowid, n in self._sizes.items()
        }
        self._scores = {}
        self.key = key

    def _add(self, rowid: int, texts: Sequence[Any]) -> None:
        postings = self._postings
        freqs: dict[str, float] = {}
        size = 0
        for weight, text in zip(WEIGHTS, texts, strict=True):
            said = self._words(
                str(text).encode(),
                apsw.FTS5_TOKENIZE_DOCUMENT,
                None,
                include_offsets=False,
                include_colocated=False,
            )
            size += len(said)
            for token in said:
                freqs[token] = freqs.get(token, 0.0) + weight
        for token, freq in freqs.items():
            rows = postings.get(token)
            if rows is None:
                rows = postings[token] = {}
            rows[rowid] = freq
        self._row_tokens[rowid] = tuple(freqs)
        self._sizes[rowid] = size
        self._tokens_total += size

    def _drop(self, rowid: int) -> None:
        for token in self._row_tokens.pop(rowid):
            rows = self._postings[token]
            del rows[rowid]
            if not rows:
                del self._postings[token]
        self._tokens_total -= self._sizes.pop(rowid)

    def _words(self, utf8: bytes, reason: int, locale: None, **flags: bool) -> list[str]:
        """The tokens of ``utf8``, as ``tool_fts`` reads them (with ``include_offsets`` and
        ``include_colocated`` false: each a plain string)."""
        return cast("list[str]", self._tokenize(utf8, reason, locale, **flags))

    def vocabulary(self, stems: Sequence[str], own: Collection[str]) -> Vocabulary:
        """``vocabulary`` of ``stems``."""
        named: dict[str, float] = {}
        idf: dict[str, float] = {}
        total = self.total
        for word in sorted(set(stems)):
            entries = self.terms.get(word)
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

    def token(self, word: str) -> str | None:
        """The one token the tokenizer reads ``word`` as in a query, or None (none, several, too long)."""
        if word in self._tokens:
            return self._tokens[word]
        said: list[str] = []
        try:
            said = self._words(
                word.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False, include_colocated=False
            )
        except UnicodeEncodeError:
            pass
        token = said[0] if len(said) == 1 and len(said[0].encode()) < _MAX_TOKEN_BYTES else None
        if len(self._tokens) >= MAX_CACHED_WORDS:
            self._tokens.clear()
        self._tokens[word] = token
        return token

    def scores(self, token: str) -> dict[int, float]:
        """Each row holding ``token`` → what the token adds to its bm25."""
        scores = self._scores.get(token)
        if scores is None:
            rows = self._postings.get(token, {})
            hits = len(rows)
            idf = math.log((self._rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            norms = self._norms
            scores = self._scores[token] = {
                rowid: idf * ((f * (_BM25_K1 + 1.0)) / (f + norms[rowid])) for rowid, f in rows.items()
            }
        return scores

    def bm25(self, words: Sequence[str]) -> list[tuple[int, float]] | None:
        """The rows matching any of ``words`` with their bm25, best first (ties by rowid), as the
        ``MATCH`` query ordered by ``rank`` gives them; None if a word is not one token."""
        tokens = []
        for word in words:
            token = self.token(word)
            if token is None:
                return None
            tokens.append(token)
        total: dict[int, float] = {}
        for token in tokens:
            scores = self.scores(token)
            if not total:
                total = dict(scores)
                continue
            get = total.get
            for rowid, score in scores.items():
                total[rowid] = get(rowid, 0.0) + score
        order = sorted(total)
        order.sort(key=total.__getitem__, reverse=True)
        return [(rowid, total[rowid]) for rowid in order]


MAX_CACHED_WORDS = 100_000
"""Query words' tokens kept per connection; the cache starts over when a new one would pass it."""


@dataclass
class _Cache:
    """A connection's cache: its latest ``_Snapshot``, each query word's token, each row's ``_Tool``."""

    snapshot: _Snapshot | None = None
    tokens: dict[str, str | None] = field(default_factory=dict)
    tools: dict[int, _Tool] = field(default_factory=dict)


_CACHES: weakref.WeakKeyDictionary[apsw.Connection, _Cache] = weakref.WeakKeyDictionary()


def _cache(conn: apsw.Connection) -> _Cache:
    cache = _CACHES.get(conn)
    if cache is None:
        cache = _CACHES[conn] = _Cache()
    return cache


def _index_key(conn: apsw.Connection) -> tuple[Any, ...]:
    """The index's state as ``_KEY_SQL`` reads it: a snapshot of another key is out of date."""
    return tuple(conn.execute(_KEY_SQL).fetchone() or ())


def warm(conn: apsw.Connection) -> None:
    """Bring the connection's ``_Snapshot`` up to the index as it is now, ahead of a search (the first
    search after a catalogue changed would otherwise pay it: ~0.1 s at 1,374 tools, ~0.4 s at 5,000).
    Nothing to do while the store has no tool index yet."""
    try:
        _snapshot(conn)
    except apsw.SQLError:  # no tool index in this store yet
        return


def warmed(conn: apsw.Connection) -> bool:
    """Whether the connection's ``_Snapshot`` is of the index as it is now (a search makes none)."""
    cache = _CACHES.get(conn)
    if cache is None or cache.snapshot is None:
        return False
    try:
        return bool(cache.snapshot.key == _index_key(conn))
    except apsw.SQLError:
        return False


def _snapshot(conn: apsw.Connection) -> _Snapshot:
    """The connection's ``_Snapshot`` of the index as it is now (made again when it changed)."""
    cache = _cache(conn)
    key = _index_key(conn)
    if cache.snapshot is None:
        cache.snapshot = _Snapshot(conn, cache.tokens)
    if cache.snapshot.key != key:
        cache.snapshot.refresh(conn, key)
    return cache.snapshot


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
_TOOL_SQL = (
    "SELECT rowid, name, upstream, tool, description, input_schema, operation, verb,"
    " name_stems, object_stems, summary_stems, tool_words FROM tool_index WHERE rowid IN ({marks})"
)


def _tools(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, _Tool]:
    """The connection's cache of ``_Tool`` s, holding (at least) these rows."""
    cache = _cache(conn).tools
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
