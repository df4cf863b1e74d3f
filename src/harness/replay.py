"""``harness replay``: copy selected events into a new store and fold every projection there."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.events import Envelope
from harness.projections import all_projections, fold, install
from harness.store import StoreError, append_raw, open_for_writing, open_read_only, read_rows, to_envelope

BATCH = 4096


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
    if harness is None:
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
) -> ReplayResult:
    """Copy events (original positions kept) from ``src`` into a new ``dst`` and fold them there."""
    if dst.exists():
        raise StoreError(f"{dst} already exists; replay writes a new store and never overwrites one")
    if src.resolve() == dst.resolve():
        raise StoreError("--to must differ from the source store")
    source = open_read_only(src)
    total = int(source.execute("SELECT count(*) FROM events").get or 0)
    target = open_for_writing(dst)
    projections = all_projections()
    install(target, projections)
    show = sys.stderr.isatty() if progress is None else progress
    started = time.perf_counter()
    copied = 0
    rows: list[tuple[int, float, str, int, str, str]] = []

    def flush() -> None:
        envelopes: list[Envelope] = [to_envelope(r) for r in rows]
        with target:
            cursor = target.cursor()
            append_raw(cursor, rows)
            fold(cursor, projections, envelopes)

    try:
        for row in read_rows(source, since=since, until=until):
            if not _keeps(row[5], harness):
                continue
            rows.append(row)
            if len(rows) >= BATCH:
                flush()
                copied += len(rows)
                rows = []
                if show:
                    _report(copied, total, time.perf_counter() - started)
        flush()
        copied += len(rows)
    finally:
        source.close()
        target.close()
    seconds = time.perf_counter() - started
    if show:
        print(file=sys.stderr)
    return ReplayResult(copied, seconds)


def _report(done: int, total: int, seconds: float) -> None:
    rate = done / seconds if seconds > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else 0.0
    print(
        f"\r{done:,}/{total:,} events  {rate:,.0f} events/s  ETA {eta:,.0f}s ",
        end="",
        file=sys.stderr,
        flush=True,
    )
