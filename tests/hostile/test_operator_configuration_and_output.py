"""Trial findings an operator meets: configuration, the store API, `harness calls` and `tools`
output, reload (``../shared/reports/2026-12-01-new-user-trial.md``)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pytest
from daemon_support import PY, RawSession, faulty, running, toml_list, wait_until
from tests_support import call_event

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.cli.formatting import format_call
from harness.config import ConfigError, load_config
from harness.reading import open_store
from harness.store import StoreError
from support import free_port


def test_open_store_given_the_state_dir_says_which_file_to_open(tmp_path):
    with pytest.raises(StoreError, match=r"harness\.db"):
        open_store(tmp_path)


def test_calls_are_listed_by_start_time_and_the_columns_stay_aligned(tmp_path):
    intake = EventIntake()
    for event in (call_event(1, ts=1_796_000_000.436), call_event(2, ts=1_796_000_000.433)):
        intake.emit(event)
    ref = LogWriterActor.start(tmp_path / "harness.db", intake)
    ref.proxy().wait_flushed().get(timeout=10)
    ref.stop()
    with open_store(tmp_path / "harness.db") as view:
        rows = view.calls()
    assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)
    long = {**rows[0], "upstream": "u", "tool": "t" * 48}
    short = {**rows[0], "upstream": "u", "tool": "t"}
    assert len(format_call(long)) == len(format_call(short))
    assert "u__t" in format_call(short)  # the name an agent calls, not u.t


def test_an_unclosed_bracket_in_a_deny_glob_is_refused_with_file_and_key(tmp_path):
    path = tmp_path / "harness.toml"
    path.write_text('[mcp.up]\nargv = ["x"]\n\n[mcp_policy.p]\nservers = ["up"]\ndeny = ["[unclosed"]\n')
    with pytest.raises(ConfigError, match=r"mcp_policy\.p\.deny.*unclosed"):
        load_config(path)


def test_a_harness_and_an_upstream_may_not_share_a_name(tmp_path):
    path = tmp_path / "harness.toml"
    path.write_text('[mcp.time]\nargv = ["x"]\n\n[harness.time]\nargv = ["y"]\n')
    with pytest.raises(ConfigError, match=r"harness\.time.*also names an upstream"):
        load_config(path)


def test_a_missing_workdir_is_reported_as_the_workdir_not_the_command(tmp_path):
    config = f'[harness.h]\nargv = ["true"]\nworkdir = "{tmp_path / "nowhere"}"\n'
    with running(tmp_path, config) as daemon:
        line = wait_until(
            lambda: next((x for x in daemon.stderr_lines if "harness h" in x), None), timeout=10
        )
    assert "workdir" in line and "nowhere" in line and "harness.h" in line


def test_a_missing_harness_env_file_names_the_key_and_the_config(tmp_path):
    config = f'[harness.h]\nargv = ["true"]\nenv_file = "{tmp_path / "nope.env"}"\n'
    with running(tmp_path, config) as daemon:
        line = wait_until(
            lambda: next((x for x in daemon.stderr_lines if "harness h" in x), None), timeout=10
        )
    assert "env_file" in line and "nope.env" in line and "harness.h" in line and "harness.toml" in line


def test_harness_tools_without_a_config_says_where_it_looked(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    run = subprocess.run(
        [PY, "-m", "harness", "tools", "--harness", "reader", "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 1
    assert "no configuration file" in run.stderr and str(tmp_path / "xdg") in run.stderr


def test_a_daemon_with_no_configuration_file_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.Popen(
        [PY, "-m", "harness", "daemon", "--state-dir", str(tmp_path / "s")],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stderr is not None
        lines = []
        for raw in proc.stderr:
            lines.append(raw.decode())
            if raw.strip() == b"ready":
                break
        assert any("no configuration file" in x and str(tmp_path / "xdg") in x for x in lines), lines
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr is not None:
            proc.stderr.close()


def test_metrics_listen_added_by_a_reload_starts_listening(tmp_path):
    base = f"[mcp.up]\nargv = {toml_list(faulty())}\n"
    with running(tmp_path, base) as daemon:
        port = free_port()
        daemon.config.write_text(f'[mcp]\nmetrics_listen = "127.0.0.1:{port}"\n\n' + base)
        daemon.harness_cli("reload")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            assert b"harness_mcp_upstream_up" in answer.read()


def test_a_bridge_with_an_exited_harness_token_is_unattributed_and_told_why(tmp_path):
    dump = tmp_path / "gone.env"
    argv = [
        PY,
        "-c",
        "import json,os,sys; open(sys.argv[1],'w').write(json.dumps(dict(os.environ)))",
        str(dump),
    ]
    config = f"[mcp.up]\nargv = {toml_list(faulty())}\n\n[harness.gone]\nargv = {toml_list(argv)}\n"
    with running(tmp_path, config) as daemon:
        env = json.loads(wait_until(lambda: dump.exists() and dump.read_text(), timeout=30))
        wait_until(
            lambda: any(
                r["state"] == "exited" for r in json.loads(daemon.harness_cli("list", "--json").stdout)
            ),
            timeout=30,
        )
        session = RawSession({**os.environ, **{k: v for k, v in env.items() if k.startswith("HARNESS_")}})
        try:
            session.initialize()
            answer = session.request(1, "tools/call", {"name": "up__echo", "arguments": {"text": "x"}})
        finally:
            session.close()
    assert "HARNESS_MCP_TOKEN" in answer["error"]["message"]


@pytest.mark.parametrize(
    "argv",
    [
        ["calls", "--limit", "0"],
        ["calls", "--limit", "-3"],
        ["calls", "--since", "yesterday"],
        ["replay", "--to", "x.db", "--since", "last week"],
        ["tools", "search", ""],
        ["tools", "search", "files", "-k", "0"],
    ],
)
def test_usage_errors_exit_2_with_one_line_and_read_nothing(tmp_path, capsys, argv):
    from harness.main import main

    # No store exists in tmp_path: a usage error must be reported before anything is opened.
    assert main([*argv, "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"harness {argv[0]}: ") and "store" not in err[0]
