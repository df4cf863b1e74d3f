"""The daemon's event loop: uvloop when it is installed, asyncio's own when told to or when uvloop
cannot be imported; a real daemon, asked through ``harness status``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import PY, clean_env, running

pytestmark = pytest.mark.slow

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def _loop_of(folder: Path, env: dict[str, str]) -> tuple[str, str]:
    """The ``event_loop`` of a daemon started with ``env``, and its text status's first line."""
    with running(folder, "", env=env) as daemon:
        status = json.loads(daemon.harness_cli("status", "--json").stdout)
        text = daemon.harness_cli("status").stdout.splitlines()[0]
    return status["event_loop"], text


@pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed here")
def test_the_daemon_runs_on_uvloop_when_it_is_installed(tmp_path: Path) -> None:
    loop, text = _loop_of(tmp_path, {})
    assert loop == "uvloop"
    assert "event loop uvloop" in text


def test_the_daemon_runs_on_asyncio_when_told_to(tmp_path: Path) -> None:
    assert _loop_of(tmp_path, {"HARNESS_EVENT_LOOP": "asyncio"})[0] == "asyncio"


def test_the_daemon_runs_on_asyncio_when_uvloop_cannot_be_imported(tmp_path: Path) -> None:
    hidden = tmp_path / "hide"
    hidden.mkdir()
    (hidden / "uvloop.py").write_text("raise ImportError('uvloop hidden by the test')\n")
    path = os.pathsep.join(filter(None, [str(hidden), os.environ.get("PYTHONPATH")]))
    assert _loop_of(tmp_path, {"PYTHONPATH": path})[0] == "asyncio"


@pytest.mark.parametrize(
    ("value", "hide", "reason"),
    [("libuv", False, "expected one of uvloop, asyncio"), ("uvloop", True, "uvloop is not installed")],
)
def test_an_event_loop_the_daemon_cannot_run_is_refused_in_one_line(
    tmp_path: Path, value: str, hide: bool, reason: str
) -> None:
    env = clean_env(HARNESS_EVENT_LOOP=value)
    if hide:
        (tmp_path / "uvloop.py").write_text("raise ImportError('uvloop hidden by the test')\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [PY, "-m", "harness", "daemon", "--state-dir", str(tmp_path / "state")],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("harness daemon: HARNESS_EVENT_LOOP=")
    assert reason in lines[0]
    assert not (tmp_path / "state" / "harness.sock").exists()
