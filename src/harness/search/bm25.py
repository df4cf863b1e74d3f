"""FTS5's bm25 over ``tool_index``, computed in memory: a per-connection ``Snapshot`` of
``tool_terms`` and of the FTS columns' postings (made again when the index changes), which scores a
query's words as a ``MATCH`` query ordered by ``rank`` would, without scoring every match in five
columns in SQL (``ranking.search`` reads it).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import Any, cast

import apsw

from harness.search.documents import FTS_COLUMNS, TOKENIZE, WEIGHTS

__all__ = ["MAX_CACHED_WORDS", "Snapshot", "snapshot", "warm", "warmed"]

MAX_CACHED_WORDS = 100_000
"""Query words' tokens kept per connection; the cache starts over when a new one would pass it."""

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


class Snapshot:
    """What a search reads of the index besides each tool's row, in memory, for one state of it
    (``key``): ``tool_terms`` by word, and the postings of every token of the FTS5 columns.

    ``refresh`` brings it to a new state reading only the rows it lacks (a row never changes: a
    catalogue's rows are new rows), so a catalogue refreshed costs its own rows, not the fleet's.
    It changes in place: a connection is searched from one thread at a time."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.key: tuple[Any, ...] = ()
        self._tokens: dict[str, str | None] = {}
        self._tokenize = conn.fts5_tokenizer(_TOKENIZER, list(_TOKENIZER_ARGS))
        self.terms: dict[str, list[tuple[str, int, int, int]]] = {}
        """``tool_terms`` by word: (upstream, its tools naming the word, product, its tool count)."""
        self.total = 1
        """The index's tool count (1 when empty)."""
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


_SNAPSHOTS: weakref.WeakKeyDictionary[apsw.Connection, Snapshot] = weakref.WeakKeyDictionary()


def _index_key(conn: apsw.Connection) -> tuple[Any, ...]:
    """The index's state as ``_KEY_SQL`` reads it: a snapshot of another key is out of date."""
    return tuple(conn.execute(_KEY_SQL).fetchone() or ())


def snapshot(conn: apsw.Connection) -> Snapshot:
    """The connection's ``Snapshot`` of the index as it is now (brought up to date when it changed)."""
    snap = _SNAPSHOTS.get(conn)
    if snap is None:
        snap = _SNAPSHOTS[conn] = Snapshot(conn)
    key = _index_key(conn)
    if snap.key != key:
        snap.refresh(conn, key)
    return snap


def warm(conn: apsw.Connection) -> None:
    """Bring the connection's ``Snapshot`` up to the index as it is now, ahead of a search (the first
    search after a catalogue changed would otherwise pay it: ~0.1 s at 1,374 tools, ~0.4 s at 5,000).
    Nothing to do while the store has no tool index yet."""
    try:
        snapshot(conn)
    except apsw.SQLError:  # no tool index in this store yet
        return


def warmed(conn: apsw.Connection) -> bool:
    """Whether the connection's ``Snapshot`` is of the index as it is now (a search makes none)."""
    snap = _SNAPSHOTS.get(conn)
    if snap is None:
        return False
    try:
        return bool(snap.key == _index_key(conn))
    except apsw.SQLError:
        return False
