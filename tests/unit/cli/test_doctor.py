"""`harness doctor` without a daemon: a bad configuration, a good one, and each wiring problem."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.cli.common import Globals
from harness.cli.doctor import examine, key_line
from harness.sample_store import SyntheticLog

PY = sys.executable

GOOD = f"""
[mcp.git]
argv = [{json.dumps(PY)}, "-m", "mcp_server_git"]
[mcp.time]
argv = [{json.dumps(PY)}, "-m", "mcp_server_time"]
[mcp.wiki]
argv = ["sh", "-c", "exec wiki-mcp"]

[mcp_policy.dev]
servers = ["git", "time"]
[mcp_policy.clock]
servers = ["time"]

[harness.coder]
argv = [{json.dumps(PY)}, "-c", "pass"]
mcp_policy = "dev"
[harness.watch]
argv = ["python3"]
mcp_policy = "clock"
[harness.idle]
autostart = false
"""


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "harness", "doctor", *args], capture_output=True, text=True, timeout=60)


def write(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "harness.toml"
    config.write_text(text)
    return config


def globals_for(config: Path, state: Path) -> Globals:
    return Globals(config=config, state_dir=state, debug=False)


def test_a_bad_configuration_is_a_problem_with_its_file_key_reason_and_line_and_the_rest_is_still_checked(
    tmp_path,
):
    config = write(tmp_path, GOOD.replace('servers = ["time"]', 'servers = ["time"]\nexposure = "wide"'))
    done = doctor("--config", str(config), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 1, done.stdout
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "wide" in text)
    problem = f"{config}: mcp_policy.clock.exposure: must be 'full', 'lazy' or 'top_k' (line {line})"
    assert f"1 problem:\n  - {problem}" in done.stdout
    assert "daemon is not running" in done.stdout or "not running" in done.stdout
    assert "store" in done.stdout and "no store yet" in done.stdout


def test_each_adapter_says_how_it_wires_its_client_and_notes_an_argv0_that_is_not_the_client(tmp_path):
    config = write(
        tmp_path,
        GOOD.replace(
            "[harness.idle]", '[harness.idle]\nharness = "claude-code"\nmcp_exclusive = true\nargv = ["sh"]'
        ),
    )
    report = examine(globals_for(config, tmp_path / "state"))
    assert report.problems == []
    lines = [f.text for f in report.findings if f.text.startswith("idle: adapter")]
    assert any("--mcp-config=clients/idle/claude-mcp.json" in t and "--strict-mcp-config" in t for t in lines)
    assert any("is not 'claude'" in t for t in lines), lines


def test_a_good_configuration_without_a_daemon_passes_and_lists_every_shared_upstream(tmp_path):
    config = write(tmp_path, GOOD)
    done = doctor("--config", str(config), "--state-dir", str(tmp_path / "state"), "--json")
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == [] and report["daemon"] is None
    assert report["shared_upstreams"] == [
        {"upstream": "git", "project": None, "reached_by": ["coder"]},
        {"upstream": "time", "project": None, "reached_by": ["coder", "watch"]},
        {"upstream": "wiki", "project": None, "reached_by": []},
    ]
    texts = [f["text"] for f in report["findings"]]
    assert any(t.startswith("not running") for t in texts)
    assert f"coder: argv[0] {PY} -> {PY}" in texts
    assert "idle: no argv: never spawned (autostart = false)" in texts
    assert "[mcp] listen (Streamable HTTP): off" in texts
    assert report["store"] == {"path": str(tmp_path / "state" / "harness.db"), "call_log_days": 30}
    human = doctor("--config", str(config), "--state-dir", str(tmp_path / "state"))
    assert human.returncode == 0 and human.stdout.rstrip().endswith("no problems found")


def test_each_wiring_problem_is_listed(tmp_path):
    text = GOOD.replace(
        "[harness.watch]\n", '[harness.watch]\nworkdir = "missing"\nenv_file = "absent.env"\n'
    ).replace('argv = ["python3"]', 'argv = ["no-such-agent-anywhere"]')
    report = examine(globals_for(write(tmp_path, text), tmp_path / "state"))
    assert report.problems == [
        f"watch: env_file: {tmp_path / 'absent.env'}: cannot read: No such file or directory",
        f"watch: workdir {tmp_path / 'missing'} is not a folder",
        "watch: argv[0] 'no-such-agent-anywhere' is not an executable on the PATH it gets",
    ]


def test_a_stale_socket_is_a_note_and_the_store_is_measured(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(state / "harness.sock"))
    stale.close()
    writer = LogWriterActor.start(state / "harness.db", EventIntake())
    writer.proxy().write(list(SyntheticLog(calls=50, seed=2, days=1).events())).get(timeout=30)
    writer.stop()
    report = examine(globals_for(write(tmp_path, GOOD), state))
    assert report.problems == []
    assert any("a stale socket" in f.text and f.status == "note" for f in report.findings)
    assert report.store["calls"] >= 50 and report.store["events"] > report.store["calls"]
    assert report.store["oldest_event"].startswith("2026-") and report.store["db_bytes"] > 0


def test_no_configuration_file_is_a_problem(tmp_path):
    report = examine(globals_for(tmp_path / "absent.toml", tmp_path / "state"))
    assert report.problems == [f"{tmp_path / 'absent.toml'}: no such file"]


def test_the_line_of_a_dotted_key_is_found_in_its_table(tmp_path):
    path = tmp_path / "keys.toml"
    path.write_text('[mcp]\ncall_log_days = 3\n\n[mcp.gitea]\nargv = ["x"]\nenv = { A = "1" }\n')
    assert key_line(path, "mcp.call_log_days") == 2
    assert key_line(path, "mcp.gitea") == 4
    assert key_line(path, "mcp.gitea.env.A") == 6
    assert key_line(path, "mcp.gitea.argv[0]") == 5
    assert key_line(path, "mcp.gitea.timeout") == 4
    assert key_line(path, "harness.x") is None


def test_skills_and_prompts_are_counted_and_a_file_left_out_is_a_problem(tmp_path):
    (tmp_path / "skills" / "ok").mkdir(parents=True)
    (tmp_path / "skills" / "ok" / "SKILL.md").write_text("---\ndescription: Fine.\n---\n")
    (tmp_path / "skills" / "bad").mkdir()
    (tmp_path / "skills" / "bad" / "SKILL.md").write_text("no front matter\n")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "p.md").write_text("Hello.\n")
    text = '[mcp]\nskill_paths = ["skills"]\nprompt_paths = ["prompts"]\n\n' + GOOD
    report = examine(globals_for(write(tmp_path, text), tmp_path / "state"))
    texts = [f.text for f in report.findings]
    assert "skills: 1 served" in texts and "prompts: 1 served" in texts
    [problem] = report.problems
    assert problem.startswith("skills: left out:") and "bad/SKILL.md" in problem


def test_an_upstream_command_not_found_on_the_path_it_gets_is_a_problem_naming_file_key_and_line(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "clock-mcp").write_text("#!/bin/sh\n")
    (tools / "clock-mcp").chmod(0o755)
    text = GOOD.replace('"sh", "-c", "exec wiki-mcp"', '"mcp-server-tyme"') + (
        f'[mcp.clock]\nargv = ["clock-mcp"]\nenv = {{ PATH = "{tools}" }}\n'
        '[mcp.local]\nargv = ["tools/clock-mcp"]\n'
    )
    config = write(tmp_path, text)
    done = doctor("--config", str(config), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 1, done.stdout
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "tyme" in row)
    problem = f"{config}: mcp.wiki.argv: argv[0] 'mcp-server-tyme' is not an executable on the PATH upstream wiki gets"
    assert f"1 problem:\n  - {problem} (line {line})" in done.stdout
    assert f"clock: argv[0] clock-mcp -> {tools / 'clock-mcp'}" in done.stdout
    assert f"local: argv[0] tools/clock-mcp -> {tools / 'clock-mcp'}" in done.stdout


def test_a_tilde_in_argv0_is_a_problem_since_exec_does_not_expand_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "agent").write_text("#!/bin/sh\n")
    (tmp_path / "agent").chmod(0o755)
    text = GOOD.replace('argv = ["python3"]', 'argv = ["~/agent"]')
    report = examine(globals_for(write(tmp_path, text), tmp_path / "state"))
    assert report.problems == ["watch: argv[0] '~/agent' is not an executable on the PATH it gets"]
