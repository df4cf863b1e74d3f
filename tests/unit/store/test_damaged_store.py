"""A damaged or newer store is refused with one line naming the file and the next step, and left
as it is: by the daemon, `harness doctor`, `harness calls` and ``open_store``."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from harness.reading import open_store
from harness.store import SCHEMA_VERSION, StoreError, open_for_writing


def store_of(path: Path, events: int = 2_000) -> Path:
    """A real store with enough events to span a few hundred KiB."""
    conn = open_for_writing(path)
    with conn:
        conn.executemany(
            "INSERT INTO events VALUES (?, ?, 'daemon.stopped', 1, '', ?)",
            [(i, float(i), '{"reason": "' + "x" * 200 + '"}') for i in range(1, events + 1)],
        )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def truncated(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(100_000)


def scribbled(path: Path) -> None:
    noise = random.Random(7).randbytes(path.stat().st_size - 4096)
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(noise)


def newer(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 97),))
    conn.close()


DAMAGES = {"truncated": truncated, "random bytes": scribbled, "a newer schema": newer}
NEXT_STEP = {
    "truncated": "move it aside",
    "random bytes": "move it aside",
    "a newer schema": "matching harness release",
}


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", DAMAGES)
def test_open_store_on_a_damaged_or_newer_store_raises_a_store_error_naming_the_file(tmp_path, damage):
    db = store_of(tmp_path / "harness.db")
    DAMAGES[damage](db)
    with pytest.raises(StoreError, match=NEXT_STEP[damage]) as refused:
        open_store(db)
    assert str(db) in str(refused.value)


@pytest.mark.parametrize("damage", DAMAGES)
def test_the_daemon_refuses_a_damaged_or_newer_store_with_one_line_and_leaves_it_as_it_was(tmp_path, damage):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = store_of(state / "harness.db")
    DAMAGES[damage](db)
    before = digest(db)
    config = tmp_path / "harness.toml"
    config.write_text("")
    done = harness("daemon", "--config", str(config), "--state-dir", str(state))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(db) in lines[0] and NEXT_STEP[damage] in lines[0]
    assert digest(db) == before
    doctor = harness("doctor", "--config", str(config), "--state-dir", str(state))
    assert "Traceback" not in doctor.stderr
    assert f"problem  {db}" in doctor.stdout and NEXT_STEP[damage] in doctor.stdout
    calls = harness("calls", "--state-dir", str(state))
    assert calls.returncode == 1
    assert calls.stderr.strip().splitlines() == [
        f"harness calls: {lines[0].removeprefix('harness daemon: ')}"
    ]
