"""The README's first command, `harness demo`, as a user runs it: a real daemon, upstream and agents."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness import open_store
from support import PY, clean_env, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # about 8 s each: the agents pause between calls

CALL_LINE = re.compile(r"^  \S+Z\s+(alice|bob)\s+demo__(echo|add)\s+ok\b")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short temporary folder: the demo's control socket lives under it, and pytest's own (longer
    under pytest-xdist) can pass the OS's limit on a socket path."""
    short = Path(tempfile.mkdtemp(prefix="hd-", dir="/tmp"))
    try:
        yield short
    finally:
        shutil.rmtree(short, ignore_errors=True)


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``harness demo --calls 3`` (echo, add, write_note) with the venv's python; its temporary files
    go under ``tmp_path``."""
    return subprocess.run(
        [PY, "-m", "harness", "demo", "--calls", "3", *args],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=tmp_path,
        env=clean_env(TMPDIR=str(tmp_path)),
    )


def processes_mentioning(path: Path) -> list[psutil.Process]:
    """Live processes whose command line, working folder or environment names ``path``."""
    mark = str(path)
    found = []
    for p in psutil.process_iter(["cmdline", "cwd", "environ", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        text = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        text += " " + " ".join(f"{k}={v}" for k, v in (p.info["environ"] or {}).items())
        if mark in text:
            found.append(p)
    return found


def leave_nothing_behind(tmp_path: Path) -> None:
    with contextlib.suppress(AssertionError):
        wait_until(lambda: not processes_mentioning(tmp_path), timeout=5, message="no demo process left")
    leftovers = processes_mentioning(tmp_path)
    for p in leftovers:
        with contextlib.suppress(psutil.Error):
            p.kill()
    assert leftovers == []


def test_harness_demo_runs_two_agents_prints_their_calls_and_where_to_look_and_leaves_no_process(tmp_path):
    done = demo(tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    calls = [line for line in out.splitlines() if CALL_LINE.match(line)]
    assert {CALL_LINE.match(line).groups() for line in calls} == {
        (who, tool) for who in ("alice", "bob") for tool in ("echo", "add")
    }
    lines = out.splitlines()
    assert sum(bool(re.match(r"^  \S+Z\s+alice\s+demo__write_note\s+ok\b", line)) for line in lines) == 1
    refusal = r"^  \S+Z\s+bob\s+demo__write_note\s+denied \(not_permitted\)"
    assert sum(bool(re.match(refusal, line)) for line in lines) == 1, out
    assert f"\n{len(calls) + 2} calls recorded (1 refused by policy); the daemon stopped" in out
    where = out[out.index("Where to look next:") :]
    [state] = tmp_path.glob("harness-demo-*/state")  # the demo's own temporary folder
    assert f"calls --state-dir {state}" in where and f"calls --state-dir {state} --json" in where
    assert str(state / "harness.db") in where
    leave_nothing_behind(tmp_path)


def test_harness_demo_with_state_dir_keeps_its_store_there_for_open_store_and_harness_calls(tmp_path):
    state = tmp_path / "demo-state"
    done = demo(tmp_path, "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    assert (state / "harness.db").is_file()
    assert (tmp_path / "demo-state-demo.toml").is_file()  # its configuration, beside the state dir
    assert not list(tmp_path.glob("harness-demo-*"))  # no temporary folder of its own
    assert f"calls --state-dir {state}" in done.stdout
    with open_store(state / "harness.db") as view:
        rows = view.calls()
    assert sorted((r["harness"], r["tool"], r["outcome"], r["error_reason"]) for r in rows) == [
        ("alice", "add", "ok", None),
        ("alice", "echo", "ok", None),
        ("alice", "write_note", "ok", None),
        ("bob", "add", "ok", None),
        ("bob", "echo", "ok", None),
        ("bob", "write_note", "denied", "not_permitted"),
    ]
    listed = subprocess.run(
        [PY, "-m", "harness", "calls", "--state-dir", str(state), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert listed.returncode == 0, listed.stderr
    as_json = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["span_id"] for r in as_json] == [r["span_id"] for r in rows]
    leave_nothing_behind(tmp_path)
