"""``harness replay``: copy selected events into a new store and fold every projection there.

The copy keeps each event's original position and the store's id, so with no filter the new
store's tables equal the live ones row for row (a property test checks it). The target is built
without a journal and without syncs (it is a new file nobody else uses) and switched to WAL at the
end, like every store.
A replay that fails (an event newer than this code) or is interrupted removes the file it began;
only a killed one leaves a file to delete, never a store to trust.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw

from harness.events import Envelope
from harness.projections import Projection, all_projections, fold, install
from harness.store import StoreError, append_raw, open_for_writing, open_read_only, read_rows, to_envelope
from harness.store.log import time_window
from harness.store.schema import STORE_ID_KEY, store_id

BATCH = 8192


@dataclass(frozen=True)
class ReplayResult:
    """What a replay did."""

    events: int
    seconds: float

    @property
    def events_per_s(self) -> float:
        """Throughput."""
        return self.events / self.seconds if self.seconds > 0 else 0.0


def _keeps(data: str, harness: str | None) -> bool:
    """With ``--harness``: that harness's events and the gateway-wide ones (no ``harness`` field)."""
    if harness is None or '"harness":' not in data:
        return True
    owner = json.loads(data).get("harness", harness)
    return bool(owner == harness)


def replay(
    src: Path,
    dst: Path,
    *,
    since: float | None = None,
    until: float | None = None,
    harness: str | None = None,
    progress: bool | None = None,
    report: Callable[[int, int, float], None] | None = None,
) -> ReplayResult:
    """Copy events (original positions kept) from ``src`` into a new ``dst`` and fold them there.

    ``since``/``until`` select by event time (``since`` ≤ ts < ``until``); ``harness`` keeps that
    harness's events and the gateway-wide ones. ``progress`` (default: stderr is a terminal) prints
    events/s and an ETA; ``report(done, total, seconds)`` is called after each batch instead if given.
    """
    if dst.exists():
        raise StoreError(f"{dst} already exists; replay writes a new store and never overwrites one")
    if src.resolve() == dst.resolve():
        raise StoreError("--to must differ from the source store")
    source = open_read_only(src)
    try:
        total = _count(source, since, until)
        target = open_for_writing(dst)
    except BaseException:
        source.close()
        raise
    projections = all_projections()
    show = sys.stderr.isatty() if progress is None else progress
    if report is None and show:
        report = print_progress
    started = time.perf_counter()
    copied = 0
    try:
        _begin_copy(source, target, projections)
        rows: list[tuple[int, float, str, int, str, str]] = []
        for row in read_rows(source, since=since, until=until):
            if harness is not None and not _keeps(row[5], harness):
                continue
            rows.append(row)
            if len(rows) >= BATCH:
                _flush(target, projections, rows)
                copied += len(rows)
                rows = []
                if report is not None:
                    report(copied, total, time.perf_counter() - started)
        _flush(target, projections, rows)
        copied += len(rows)
        target.execute("PRAGMA journal_mode=WAL")
        target.execute("PRAGMA synchronous=NORMAL")
    except BaseException:  # refused (an event newer than this code) or interrupted: no file remains
        _discard(target, dst)
        raise
    else:
        target.close()
    finally:
        source.close()
    seconds = time.perf_counter() - started
    if report is not None:
        report(copied, copied, seconds)
    if show:
        print(file=sys.stderr)
    return ReplayResult(copied, seconds)


def _begin_copy(source: apsw.Connection, target: apsw.Connection, projections: Sequence[Projection]) -> None:
    """Lay out the new store's tables with the source's id (its positions name the same events:
    exports tell stores apart by it), unjournalled and unsynced until the end."""
    install(target, projections)
    target.execute("UPDATE store_meta SET value = ? WHERE key = ?", (store_id(source), STORE_ID_KEY))
    target.execute("PRAGMA journal_mode=OFF")
    target.execute("PRAGMA synchronous=OFF")
    target.execute("PRAGMA cache_size=-65536")


def _discard(target: apsw.Connection, dst: Path) -> None:
    """Close and remove a store a replay began (with its WAL and shared-memory files)."""
    target.close()
    for leftover in (dst, dst.with_name(dst.name + "-wal"), dst.with_name(dst.name + "-shm")):
        leftover.unlink(missing_ok=True)


def _flush(
    target: apsw.Connection,
    projections: Sequence[Projection],
    rows: list[tuple[int, float, str, int, str, str]],
) -> None:
    """Append stored rows as they are and fold them (stored rows fold in SQL where they can)."""
    envelopes: list[Envelope] = [to_envelope(r) for r in rows]
    with target:
        cursor = target.cursor()
        append_raw(cursor, rows)
        fold(cursor, projections, envelopes)


def _count(source: apsw.Connection, since: float | None, until: float | None) -> int:
    window, args = time_window(since, until)
    return int(source.execute(f"SELECT count(*) FROM events WHERE 1{window}", args).get or 0)


def print_progress(done: int, total: int, seconds: float, unit: str = "events") -> None:
    """One line on stderr, rewritten in place: done/total, the rate and an ETA (a terminal's)."""
    rate = done / seconds if seconds > 0 else 0.0
    eta = max(0, total - done) / rate if rate > 0 else 0.0
    print(
        f"\r{done:,}/{total:,} {unit}  {rate:,.0f} {unit}/s  ETA {eta:,.0f}s ",
        end="",
        file=sys.stderr,
        flush=True,
    )
