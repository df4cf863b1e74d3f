"""Issue 10's first bar with a real daemon: secrets an agent puts in call arguments (each credential
family, nested, in keys and values, plain and encoded) and every upstream ``env_file`` value are
absent, byte for byte, from ``harness.db``, its ``-wal`` and ``-shm`` and every log the daemon
writes, under the default ``call_log_args`` ("redacted") — while it runs and after it stops."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_support import RawSession, env_dumper, faulty, harness_env, running, toml_list

from devtools.credentials import CREDENTIAL_FAMILIES, ENCODINGS, secret_part

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # a real daemon, ~3 s

ENV_VALUES = ("Zq-UPSTREAM-SECRET-4711-kV9", "8f1c2e7d-db-password-Qx3")


def needles() -> list[bytes]:
    """What must be found nowhere: each secret's credential part, and every env_file value."""
    found = [v.encode() for v in ENV_VALUES]
    found += [secret_part(s).encode() for f in CREDENTIAL_FAMILIES.values() for s in f.secrets]
    return found


def leaks(state: Path, daemon_stderr: str) -> list[str]:
    files = [p for p in state.rglob("*") if p.is_file() and not p.is_socket()]
    assert any(p.name == "harness.db" for p in files)
    out = []
    for needle in needles():
        for path in files:
            if needle in path.read_bytes():
                out.append(f"{needle.decode(errors='replace')} in {path.name}")
        if needle in daemon_stderr.encode():
            out.append(f"{needle.decode(errors='replace')} in the daemon's stderr")
    return out


def test_no_secret_from_arguments_or_env_files_is_at_rest_in_the_store_or_any_log(tmp_path):
    env_file = tmp_path / "up.env"
    env_file.write_text(f"API_TOKEN={ENV_VALUES[0]}\nDB_PASSWORD={ENV_VALUES[1]}\n")
    config = (
        f'[mcp.up]\nargv = {toml_list(faulty())}\nenv_file = "{env_file}"\n'
        'env = { API_TOKEN = "${API_TOKEN}", DB_PASSWORD = "${DB_PASSWORD}" }\n\n'
        '[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(env_dumper(tmp_path / "agent.env"))}\nmcp_policy = "p"\n'
    )
    secrets = [s for f in CREDENTIAL_FAMILIES.values() for s in f.secrets] + list(ENV_VALUES)
    with running(tmp_path, config) as daemon:
        session = RawSession(harness_env(tmp_path / "agent.env"))
        try:
            session.initialize()
            n = 0
            for secret in secrets:
                for shown in (encode(secret) for encode in ENCODINGS.values()):
                    n += 1
                    arguments = {"text": f"use {shown} now", "deep": [{"k": {shown: [shown]}}]}
                    answer = session.request(n, "tools/call", {"name": "up__echo", "arguments": arguments})
                    assert "result" in answer, answer
        finally:
            session.close()
        rows = [c for c in daemon.calls() if c["harness"] == "agent"]
        assert len(rows) == n and all(r["outcome"] == "ok" for r in rows)
        assert (daemon.state / "harness.db-wal").exists()
        assert leaks(daemon.state, "".join(daemon.stderr_lines)) == []
    assert leaks(daemon.state, "".join(daemon.stderr_lines)) == []
