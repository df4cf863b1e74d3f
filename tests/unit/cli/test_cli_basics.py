"""The command line: global options anywhere, durations, one-line errors and exit codes."""

from __future__ import annotations

import runpy
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from harness.cli.common import CliError, parse_since
from harness.main import _take_global


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60
    )


def test_global_options_are_taken_from_anywhere_on_the_line():
    rest, opts = _take_global(["calls", "--json", "--state-dir", "/s", "--limit", "3", "--config=/c.toml"])
    assert rest == ["calls", "--json", "--limit", "3"]
    assert opts == {"state-dir": "/s", "config": "/c.toml"}


def test_since_accepts_durations_and_iso_times():
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_since("90s", now) == datetime(2026, 1, 2, 3, 2, 35, tzinfo=UTC)
    assert parse_since("7d", now) == datetime(2025, 12, 26, 3, 4, 5, tzinfo=UTC)
    assert parse_since("2026-01-01T00:00:00Z", now) == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(CliError, match="duration"):
        parse_since("yesterday", now)


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["calls"], "--since"),
        (["replay", "--to", "out.db"], "--since"),
        (["replay", "--to", "out.db"], "--until"),
    ],
)
def test_a_since_past_100_years_is_a_one_line_usage_error_naming_the_maximum(tmp_path, command, option):
    done = harness(*command, option, "99999999999d", "--state-dir", str(tmp_path / "none"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"{option} '99999999999d' is longer than the longest duration accepted, 36500d" in done.stderr


def test_calls_without_a_store_is_one_line_on_stderr_and_exit_1(tmp_path):
    done = harness("calls", "--state-dir", str(tmp_path / "none"))
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "no store here" in done.stderr


def test_a_bad_config_is_refused_with_file_key_and_reason(tmp_path):
    config = tmp_path / "harness.toml"
    config.write_text('[mcp.gitea]\nargv = ["x"]\ncolour = "red"\n')
    done = harness("daemon", "--config", str(config), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1
    assert str(config) in line and "mcp.gitea.colour" in line and "unknown key" in line


def test_python_dash_m_harness_is_the_harness_command(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["harness", "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("harness", run_name="__main__")
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: harness")


def test_an_unknown_subcommand_is_a_usage_error_with_exit_2():
    assert harness("frobnicate").returncode == 2


def test_a_second_daemon_on_the_same_state_dir_is_refused(tmp_path):
    import fcntl
    import os

    state = tmp_path / "s"
    state.mkdir()
    fd = os.open(state / "harness.lock", os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, b"4242\n")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        config = tmp_path / "harness.toml"
        config.write_text("")
        done = harness("daemon", "--config", str(config), "--state-dir", str(state))
    finally:
        os.close(fd)
    assert done.returncode == 1
    assert "another daemon is running" in done.stderr and "4242" in done.stderr


def test_version_prints_the_version_and_exits_0(capsys):
    from harness import __version__
    from harness.main import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"harness {__version__}"


def test_the_top_level_help_lists_the_global_options_and_replay_help_has_the_epilog(capsys):
    from harness.main import main

    for argv, wanted in (
        (["--help"], ("--config FILE", "--state-dir DIR", "--debug")),
        (["replay", "-h"], ()),
    ):
        with pytest.raises(SystemExit):
            main(argv)
        out = capsys.readouterr().out
        options = out.split("options:", 1)[1]
        assert all(option in options for option in wanted), out
        assert "accepted anywhere on the command line" in " ".join(out.split()), out


def test_a_relative_xdg_state_home_is_ignored_by_the_cli_and_the_bridge(monkeypatch, tmp_path):
    from harness.cli import bridge
    from harness.store.location import default_state_dir

    monkeypatch.delenv("HARNESS_SOCKET", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")
    default = tmp_path / ".local" / "state" / "harness"
    assert default_state_dir() == default
    assert bridge._socket_path(None) == str(default / "harness.sock")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "abs"))
    assert default_state_dir() == tmp_path / "abs" / "harness"
