"""WAL checkpoints off the writer's thread.

In WAL mode every commit appends pages to ``harness.db-wal``; a checkpoint copies them back into
the database file and syncs both (with ``synchronous=NORMAL`` that is the only time anything is
synced). SQLite's automatic checkpoint runs inside the commit that crosses 1,000 WAL pages, so the
single writer waits for the copy and the syncs: on a slow disk that was a fifth of its time.

:class:`BackgroundCheckpoints` replaces it: the writer's commit hook notes the WAL's size and wakes
a thread with its own connection, which runs the same PASSIVE checkpoint (never blocks the writer
or a reader) while the writer goes on with the next batch. SQLite releases the GIL for the whole
checkpoint, so it costs the loop and the writer nothing. If that thread falls behind and the WAL
reaches ``limit`` pages, the writer checkpoints itself after its commit, as SQLite would have.

Durability is unchanged: a commit is in the WAL file when it returns, so a killed process loses
nothing committed; the syncs happen at the same WAL sizes as before (the checkpointing connection
also uses ``synchronous=NORMAL``), so a power loss can lose what it could before, the commits since
the last checkpoint.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import apsw

log = logging.getLogger("harness.store")

CHECKPOINT_PAGES = 1_000
"""WAL pages after which the background thread checkpoints (SQLite's automatic default)."""

CHECKPOINT_LIMIT = 8_000
"""WAL pages (~32 MB) after which the writer checkpoints in its own thread: the background thread
fell behind (or is gone)."""


class BackgroundCheckpoints:
    """Checkpoints the WAL of ``conn``'s store from a thread of its own (see the module docstring).

    Install on the writer's connection with :meth:`start`; call :meth:`after_commit` after each of
    the writer's commits (it checkpoints in the writer's thread only past ``limit``); :meth:`stop`
    before closing the writer's connection.
    """

    def __init__(
        self,
        path: Path,
        conn: apsw.Connection,
        *,
        pages: int = CHECKPOINT_PAGES,
        limit: int = CHECKPOINT_LIMIT,
    ) -> None:
        self._path = path
        self._conn = conn
        self._pages = pages
        self._limit = limit
        self._wal_pages = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._last_error = ""
        self.background = 0
        """Checkpoints run by the background thread."""
        self.inline = 0
        """Checkpoints the writer ran itself (the background thread had fallen behind)."""

    def start(self) -> None:
        """Take over checkpointing from SQLite's automatic one and start the thread."""
        self._conn.set_wal_hook(self._committed)  # replaces the automatic checkpoint
        self._thread = threading.Thread(target=self._run, name="harness-wal-checkpoint", daemon=True)
        self._thread.start()

    def _committed(self, _conn: apsw.Connection, _dbname: str, pages: int) -> int:
        """SQLite's WAL hook, in the writer's thread after each commit: note the size, wake the thread."""
        self._wal_pages = pages
        if pages >= self._pages:
            self._wake.set()
        return apsw.SQLITE_OK

    def after_commit(self) -> None:
        """In the writer's thread, after its commit: checkpoint here if the WAL reached ``limit``."""
        if self._wal_pages >= self._limit:
            self._wal_pages = 0
            try:
                self._conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
            except apsw.BusyError:  # the background thread is checkpointing right now
                return
            except apsw.Error as exc:  # the commit stands; the next one past the limit tries again
                self._failed(exc)
                return
            self.inline += 1

    def _run(self) -> None:
        try:
            conn = apsw.Connection(str(self._path), flags=apsw.SQLITE_OPEN_READWRITE)
        except apsw.Error:
            log.exception("no background WAL checkpoints; the writer checkpoints past the limit")
            return
        try:
            conn.execute("PRAGMA synchronous=NORMAL")  # syncs as the writer's own checkpoints did
            conn.set_wal_hook(None)
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
                    self.background += 1
                except apsw.BusyError:  # another checkpoint is running: the next wake-up retries
                    continue
                except apsw.Error as exc:
                    self._failed(exc)
        finally:
            conn.close()

    def _failed(self, exc: apsw.Error) -> None:
        """One line for a failed checkpoint (a full disk, an I/O error), not one per attempt."""
        text = str(exc)
        if text != self._last_error:
            self._last_error = text
            log.warning("WAL checkpoint failed (%s); the WAL grows until one succeeds", text)

    def stop(self) -> None:
        """Stop the thread (before the writer's connection closes) and give SQLite its hook back."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._conn.set_wal_hook(None)
        self._conn.wal_autocheckpoint(CHECKPOINT_PAGES)
