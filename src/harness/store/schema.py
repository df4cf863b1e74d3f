"""The store file: its identity, schema version, the append-only event table and its triggers."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

STORE_FORMAT = "harness-store"
SCHEMA_VERSION = 2
"""1: the first release. 2: the DELETE trigger lets retention compaction through (see below)."""

READABLE_VERSIONS = frozenset({1, 2})
"""Schema versions a read-only connection accepts (they differ only in the writer's triggers)."""

RETENTION_CUTOFF_KEY = "retention_cutoff"
"""``store_meta`` key the compaction sets, inside its own transaction, to the cutoff it deletes below.

The DELETE trigger refuses every deletion except of an event older than this cutoff while the key
is present. The compaction removes the key before it commits, so no other transaction ever sees it.
"""

STORE_ID_KEY = "store_id"
"""``store_meta`` key of the store's id (16 hex digits): the daemon's id in exports' file names."""

_REFUSE_DELETE = f"""
CREATE TRIGGER IF NOT EXISTS events_refuse_delete BEFORE DELETE ON events
WHEN NOT coalesce(
    OLD.ts < (SELECT CAST(value AS REAL) FROM store_meta WHERE key = '{RETENTION_CUTOFF_KEY}'), 0)
BEGIN SELECT RAISE(ABORT, 'the event log is append-only: DELETE refused'); END;
"""

_LOG_DDL = (
    """
CREATE TABLE IF NOT EXISTS store_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events(
    position    INTEGER PRIMARY KEY,
    ts          REAL    NOT NULL,
    name        TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    correlation TEXT    NOT NULL,
    data        TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
CREATE TRIGGER IF NOT EXISTS events_refuse_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only: UPDATE refused'); END;
CREATE TABLE IF NOT EXISTS projection_checkpoints(
    name     TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    position INTEGER NOT NULL
);
"""
    + _REFUSE_DELETE
)

_MIGRATIONS = {
    1: "DROP TRIGGER events_refuse_delete;" + _REFUSE_DELETE,
}
"""from version → SQL to the next version. Only the log's own schema migrates; projections rebuild."""


class StoreError(Exception):
    """The store file is missing, not a Harness store, or of a schema this code does not understand."""


class StoreNotCreated(StoreError):
    """No store yet: the file is missing, or the writer has not laid out its schema (a new store)."""


def _check_identity(conn: apsw.Connection, path: Path, accepted: frozenset[int]) -> int:
    """The schema version of an initialised Harness store this code can use; 0 if the file is empty."""
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return 0
        if "store_meta" not in tables:
            raise StoreError(f"{path}: not a Harness store (no store_meta table)")
        meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM store_meta")}
        if meta.get("format") != STORE_FORMAT:
            raise StoreError(f"{path}: not a Harness store (format {meta.get('format')!r})")
        if "events" in tables:  # a file damaged at the log's newest page is refused here too
            conn.execute("SELECT max(position) FROM events").fetchall()
    except apsw.Error as exc:
        raise unreadable(path, exc) from None
    version = meta.get("schema_version", "0")
    if not version.isdigit() or int(version) not in accepted:
        raise StoreError(
            f"{path}: store schema version {version}, this harness understands {SCHEMA_VERSION}; it was "
            "left as it is: use a matching harness release (that release's `harness replay` can copy "
            "the log into a new store)"
        )
    return int(version)


def unreadable(path: Path, exc: apsw.Error) -> StoreError:
    """The refusal of a store file SQLite cannot read (damaged, or not a database at all), with the
    next step."""
    detail = str(exc).split(": ", 1)[-1] or type(exc).__name__
    return StoreError(
        f"{path} is not a readable SQLite store ({detail}); it was left as it is: move it aside "
        f"(the daemon then starts an empty store), or move it aside and `harness replay --db COPY "
        f"--to {path}` from an intact copy"
    )


WRITER_BUSY_TIMEOUT_MS = 5000
"""How long the writer's statement waits for another connection's write lock before the group is
held and retried (the log writer's backoff)."""


def open_for_writing(path: Path) -> apsw.Connection:
    """Open (creating if needed, mode 0600) the store for the single writer: WAL, NORMAL sync.

    ``StoreError`` (one line) when it cannot be opened for writing: not a store, a read-only file or
    file system, a full disk, a folder in its place.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        conn = _open_writable(path)
    except (OSError, apsw.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StoreError(f"{path}: cannot open the store for writing: {reason}") from exc
    return conn


def _open_writable(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    try:
        _initialise(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _initialise(conn: apsw.Connection, path: Path) -> None:
    if conn.readonly("main"):
        raise StoreError(f"{path}: cannot open the store for writing: read-only file or file system")
    conn.set_busy_timeout(WRITER_BUSY_TIMEOUT_MS)
    version = _check_identity(conn, path, frozenset(_MIGRATIONS) | {SCHEMA_VERSION})
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    while 0 < version < SCHEMA_VERSION:
        with conn:
            conn.execute(_MIGRATIONS[version])
            version += 1
            conn.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    if not version:
        with conn:
            conn.execute(_LOG_DDL)
            conn.execute(
                "INSERT INTO store_meta(key, value) VALUES ('format', ?), ('schema_version', ?)",
                (STORE_FORMAT, str(SCHEMA_VERSION)),
            )
    if conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (STORE_ID_KEY,)).fetchone() is None:
        with conn:  # once in a store's life: an open never writes otherwise (another writer may lock it)
            conn.execute("INSERT OR IGNORE INTO store_meta VALUES (?, ?)", (STORE_ID_KEY, store_id(conn)))


def store_id(conn: apsw.Connection) -> str:
    """The store's id: random when the store is made. A store made before ids were gets one from its
    first event, so a reader that meets it without one and the writer that records it agree."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (STORE_ID_KEY,)).fetchone()
    if row is not None:
        return str(row[0])
    first = conn.execute("SELECT position, ts, name, data FROM events ORDER BY position LIMIT 1").fetchone()
    if first is None:
        return secrets.token_hex(8)
    return hashlib.sha256(json.dumps(list(first)).encode()).hexdigest()[:16]


WRITER_CACHE_KIB = 16_384
"""Page cache of the writer's connection: large enough that a full group's dirty pages are not
spilled into the WAL before the commit and read back, as with SQLite's default (bench/README.md)."""


def tune_for_writer(conn: apsw.Connection) -> None:
    """Settings of the single writer's connection: none changes what is durable.

    A page cache a group commit fits in (``WRITER_CACHE_KIB``), and statement journals kept in
    memory (``temp_store``): a multi-row INSERT journals the pages it changes in case it must
    roll back, into a temporary file by default.
    """
    conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
    conn.execute("PRAGMA temp_store=MEMORY")


@contextmanager
def transaction(conn: apsw.Connection) -> Iterator[apsw.Cursor]:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` when the block raises), for the writer's group commits.

    ``with conn:`` opens a SAVEPOINT instead, and while one is open SQLite copies every page the
    transaction changes into a sub-journal first, in case of a ``ROLLBACK TO``: work a plain
    transaction, which is all a group commit needs, does not do.
    """
    conn.execute("BEGIN")
    try:
        yield conn.cursor()
        conn.execute("COMMIT")  # a COMMIT that fails (busy, full) leaves the transaction open: rolled back
    except BaseException:
        if not conn.get_autocommit():  # SQLite may have rolled back already
            conn.execute("ROLLBACK")
        raise


def open_read_only(path: Path) -> apsw.Connection:
    """A read-only connection for readers (CLI, evals, notebooks); WAL lets it run beside the writer."""
    if not path.exists():
        raise StoreNotCreated(f"{path}: no store here (has the daemon ever run with this state dir?)")
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(5000)
    if not _check_identity(conn, path, READABLE_VERSIONS):
        conn.close()
        raise StoreNotCreated(f"{path}: empty file, not a Harness store")
    return conn


def check_usable(path: Path) -> None:
    """Refuse (``StoreError``, one line with the next step) a store file the daemon could not use:
    damaged, not a Harness store, or of another schema. Read-only: the file is left as it is (SQLite
    may add its empty ``-wal`` and ``-shm`` beside it). A missing or empty file passes (the writer
    initialises it)."""
    if path.is_file() and path.stat().st_size:  # a folder in its place: the writer says so
        open_read_only(path).close()
