"""`harness calls --harness NAME`: a name neither the configuration nor the log knows is an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests_support import call_event

from harness.actors.log_writer import EventIntake, LogWriterActor


def calls(state: Path, config: Path, harness: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "calls",
            "--harness",
            harness,
            "--state-dir",
            str(state),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_calls_for_a_harness_unknown_to_the_configuration_and_the_log_is_an_error(tmp_path):
    intake = EventIntake()
    writer = LogWriterActor.start(tmp_path / "harness.db", intake)
    intake.attach(writer)
    try:
        intake.emit(call_event(0, harness="removed"))
        writer.proxy().wait_flushed().get(timeout=10)
    finally:
        writer.stop()
    config = tmp_path / "harness.toml"
    config.write_text('[harness.idle]\nargv = ["agent"]\n')
    unknown = calls(tmp_path, config, "nosuch")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == "harness calls: no harness named 'nosuch' in the configuration or the log\n"
    removed = calls(tmp_path, config, "removed")  # gone from the configuration, still in the log
    assert removed.returncode == 0 and "tool0" in removed.stdout
    idle = calls(tmp_path, config, "idle")  # configured, no calls yet
    assert (idle.returncode, idle.stdout, idle.stderr) == (0, "", "")
