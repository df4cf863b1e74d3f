"""A crashed daemon's harnesses, as the next daemon finds them in ``running.json``: stopped with
their session when provably theirs, never when the pid's start time (or the boot) differs; and the
exec wrapper every harness starts through."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness.gateway.harnesses.deathsig import dying_with_daemon
from harness.gateway.harnesses.survivors import RunningRecord, boot_id, stop_survivors, survivor_line
from support import wait_until


@pytest.fixture
def harness_like() -> Iterator[subprocess.Popen[bytes]]:
    """A session leader with a child, as a harness and its agent's own process."""
    proc = subprocess.Popen(
        ["sh", "-c", "sleep 300 & wait"],
        start_new_session=True,
        env={**os.environ, "HARNESS_RUN_ID": "run-1"},
    )
    wait_until(lambda: psutil.Process(proc.pid).children(), timeout=10)
    yield proc
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 9)
    proc.wait(10)


def test_a_recorded_harness_still_running_is_stopped_with_its_session(tmp_path, harness_like):
    [child] = psutil.Process(harness_like.pid).children()
    RunningRecord(tmp_path / "running.json").add("h", harness_like.pid, "run-1")
    [stopped] = stop_survivors(RunningRecord(tmp_path / "running.json"), grace=5)
    assert stopped.leader_alive and stopped.pids == (harness_like.pid, child.pid)
    assert harness_like.wait(10) == -15
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert (
        f"stopped a survivor of the previous daemon, pid {harness_like.pid}, {child.pid} (run"
        in survivor_line(stopped)
    )
    assert json.loads((tmp_path / "running.json").read_text())["harnesses"] == []


def test_a_recorded_pid_whose_start_time_differs_is_never_signalled(tmp_path, harness_like):
    record = RunningRecord(tmp_path / "running.json")
    record.add("h", harness_like.pid, "run-1")
    data = json.loads(record.path.read_text())
    data["harnesses"][0] |= {"start": data["harnesses"][0]["start"] - 1, "run_id": "run-0"}  # pid reused
    record.path.write_text(json.dumps(data))
    assert stop_survivors(RunningRecord(record.path), grace=5) == []
    assert harness_like.poll() is None


def test_a_record_from_another_boot_is_ignored(tmp_path, harness_like):
    record = RunningRecord(tmp_path / "running.json")
    record.add("h", harness_like.pid, "run-1")
    data = json.loads(record.path.read_text())
    record.path.write_text(json.dumps({**data, "boot_id": "another"}))
    assert stop_survivors(RunningRecord(record.path), grace=5) == []
    assert harness_like.poll() is None


def test_a_harness_started_through_the_wrapper_keeps_its_pid_and_exit_status(tmp_path):
    argv = dying_with_daemon(["sh", "-c", "echo $$; exit 7"], dict(os.environ), tmp_path)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert (proc.returncode, int(out)) == (7, proc.pid)


SPAWNER = """
import os, subprocess, sys
from pathlib import Path
from harness.gateway.harnesses.deathsig import dying_with_daemon
child = subprocess.Popen(dying_with_daemon(["sleep", "301"], dict(os.environ), Path(".")))
print(child.pid, flush=True)
child.wait()
"""


def test_a_harness_started_through_the_wrapper_dies_when_its_daemon_is_killed():
    daemon = subprocess.Popen([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, text=True)
    assert daemon.stdout is not None
    harness = psutil.Process(int(daemon.stdout.readline()))
    wait_until(lambda: harness.name() == "sleep", timeout=10)  # exec'd: the wrapper is gone
    daemon.kill()
    daemon.wait(10)
    daemon.stdout.close()
    wait_until(
        lambda: not harness.is_running() or harness.status() == psutil.STATUS_ZOMBIE,
        timeout=10,
        message="the harness died with its daemon",
    )


def test_a_missing_program_fails_to_start_as_it_would_without_the_wrapper(tmp_path):
    with pytest.raises(FileNotFoundError):
        dying_with_daemon(["no-such-agent-cli"], {"PATH": str(tmp_path)}, tmp_path)
    with pytest.raises(FileNotFoundError):
        dying_with_daemon(["./agent.sh"], dict(os.environ), Path(tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        '{"boot_id": 1}',
        '{"boot_id": "B", "harnesses": [{"name": "h", "pid": "x"}]}',
    ],
)
def test_a_damaged_record_is_read_as_nothing_running(tmp_path, text):
    record = RunningRecord(tmp_path / "running.json")
    record.path.write_text(text.replace('"B"', json.dumps(boot_id())))
    assert stop_survivors(record, grace=1) == []


def test_a_record_with_a_start_time_that_is_not_a_number_signals_nothing(tmp_path, harness_like):
    record = RunningRecord(tmp_path / "running.json")
    entry = {"name": "h", "pid": harness_like.pid, "start": "soon", "run_id": "run-1"}
    record.path.write_text(json.dumps({"boot_id": boot_id(), "harnesses": [entry]}))
    assert stop_survivors(record, grace=1) == []
    assert harness_like.poll() is None


def test_a_recorded_harness_that_is_an_ancestor_of_the_new_daemon_is_left_alone(tmp_path):
    record = RunningRecord(tmp_path / "running.json")
    record.add("h", os.getppid(), "run-1")  # a daemon started from inside that harness
    assert stop_survivors(RunningRecord(record.path), grace=1) == []
