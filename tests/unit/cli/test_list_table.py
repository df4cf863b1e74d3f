"""`harness list` for people: the columns stay aligned whatever the state."""

from __future__ import annotations

import argparse

from harness.cli import commands
from harness.cli.common import globals_from

ROWS = [
    {"name": "coder", "state": "running", "pid": 4242, "policy": "dev", "sessions": 1, "run_id": "r1"},
    {"name": "flaky", "state": "restarting", "pid": None, "policy": None, "sessions": 0, "run_id": None},
    {
        "name": "a-long-harness-name-x",
        "state": "stopped",
        "pid": None,
        "policy": "p",
        "sessions": 0,
        "run_id": None,
        "project": "/srv/p",
    },
]


def test_list_keeps_the_pid_column_aligned_for_a_restarting_harness(monkeypatch, capsys):
    monkeypatch.setattr("harness.cli.common.control_request", lambda _paths, _command: ROWS)
    assert commands._cmd_list(argparse.Namespace(json=False), globals_from({"state-dir": "/nowhere"})) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    pid_end = header.index("PID") + len("PID")
    assert [line[pid_end - 4 : pid_end] for line in lines] == ["4242", "   -", "   -"]
    policy = header.index("POLICY")
    assert [line[policy:].split()[0] for line in lines] == ["dev", "-", "p"]
    assert lines[2].endswith("/srv/p")
