"""The state dir must be the daemon's own: another user's is refused, ours is tightened to 0700."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gateway.state_dir import DaemonLock, StateDirError, StatePaths


def daemon(tmp_path: Path, state: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "harness.toml"
    config.write_text("")
    return subprocess.run(
        [sys.executable, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def nobody() -> int:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("no user nobody")


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_state_dir_another_user_owns_is_refused_with_one_line_and_left_as_it_was(tmp_path):
    state = tmp_path / "foreign-state"
    state.mkdir()
    os.chown(state, nobody(), -1)
    state.chmod(0o777)
    done = daemon(tmp_path, state)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(state) in lines[0] and "nobody" in lines[0] and "chown" in lines[0]
    assert (state.stat().st_mode & 0o777) == 0o777  # not chmodded: refused before anything
    assert list(state.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_store_file_another_user_owns_in_our_state_dir_is_refused(tmp_path):
    paths = StatePaths(tmp_path / "state")
    paths.root.mkdir(mode=0o700)
    paths.db.write_bytes(b"")
    os.chown(paths.db, nobody(), -1)
    with pytest.raises(StateDirError, match=f"{paths.db} is owned by nobody"):
        DaemonLock(paths).acquire()


def test_a_world_writable_state_dir_we_own_is_tightened_to_0700(tmp_path):
    paths = StatePaths(tmp_path / "state")
    paths.root.mkdir()
    paths.root.chmod(0o777)
    lock = DaemonLock(paths)
    lock.acquire()
    try:
        assert (paths.root.stat().st_mode & 0o777) == 0o700
    finally:
        lock.release()
