"""`harness logs NAME` with no daemon running: the operator reads the log files themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def logs(tmp_path: Path, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_MCP_TOKEN"}
    if token is not None:
        env["HARNESS_MCP_TOKEN"] = token
    common = ("--config", str(tmp_path / "harness.toml"), "--state-dir", str(tmp_path / "state"))
    return subprocess.run(
        [sys.executable, "-m", "harness", "logs", *args, *common],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_logs_without_a_daemon_reads_the_harness_or_upstream_log_file_for_the_operator_only(tmp_path):
    (tmp_path / "time.env").write_text("TIME_TOKEN=held-by-the-daemon-1234\n")
    (tmp_path / "harness.toml").write_text(
        '[mcp.time]\nargv = ["t"]\nenv_file = "time.env"\nenv = { T = "${TIME_TOKEN}" }\n'
        '[harness.coder]\nargv = ["agent"]\n'
    )
    upstream_log = "tick\nusing token held-by-the-daemon-1234\n"
    for folder, name, text in (
        ("harnesses", "coder", "one\ntwo\nthree\n"),
        ("upstreams", "time", upstream_log),
    ):
        (tmp_path / "state" / folder).mkdir(parents=True)
        (tmp_path / "state" / folder / f"{name}.log").write_text(text)
    coder = logs(tmp_path, "coder", "-n", "2")
    assert (coder.returncode, coder.stdout) == (0, "two\nthree\n"), coder.stderr
    assert "no daemon is running" in coder.stderr
    time = json.loads(logs(tmp_path, "time", "--json").stdout)
    assert (time["kind"], time["lines"]) == ("upstream", ["tick", "using token [REDACTED]"])
    nobody = logs(tmp_path, "nobody")
    assert nobody.returncode == 1 and "no harness or upstream named 'nobody'" in nobody.stderr
    inside = logs(tmp_path, "coder", token="a-harness-token")  # inside a harness: only the daemon answers
    assert inside.returncode == 1 and inside.stdout == "" and "only the daemon answers" in inside.stderr
