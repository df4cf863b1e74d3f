"""The daemon's store reader on a new state dir: no store yet means no catalogue kept, not an error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import apsw

from harness.gateway.store_reader import StoreReader


async def latest(db: Path) -> object:
    reader = StoreReader(db)
    try:
        return await reader.latest_catalogue("time")
    finally:
        reader.close()


def test_a_new_store_that_is_missing_or_still_empty_has_no_kept_catalogue_and_is_no_error(tmp_path):
    assert asyncio.run(latest(tmp_path / "missing.db")) is None
    (tmp_path / "zero.db").write_bytes(b"")
    assert asyncio.run(latest(tmp_path / "zero.db")) is None
    apsw.Connection(str(tmp_path / "fresh.db")).execute("PRAGMA user_version = 0").close()
    assert asyncio.run(latest(tmp_path / "fresh.db")) is None
