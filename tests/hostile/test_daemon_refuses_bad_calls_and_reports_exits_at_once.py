"""Trial findings that need a real daemon, real bridges and real upstream processes
(``../shared/reports/2026-12-01-new-user-trial.md``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from daemon_support import PY, RawSession, env_dumper, faulty, harness_env, running, toml_list, wait_until


def _config(record: Path, dump: Path, sibling: Path) -> str:
    return (
        f'[mcp.up]\nargv = {toml_list(faulty("--record", str(record)))}\ntimeout = "2s"\n'
        'breaker_failures = 5\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.attacker]\nargv = {toml_list(env_dumper(dump))}\nmcp_policy = "p"\n\n'
        f'[harness.sibling]\nargv = {toml_list(env_dumper(sibling))}\nmcp_policy = "p"\n'
    )


def test_nan_calls_are_refused_at_once_never_reach_the_upstream_and_cannot_open_the_breaker(tmp_path):
    record, dump, sibling = tmp_path / "up.rec", tmp_path / "attacker.env", tmp_path / "sibling.env"
    with running(tmp_path, _config(record, dump, sibling)):
        attacker = RawSession(harness_env(dump))
        try:
            attacker.initialize()
            started = time.monotonic()
            for i in range(1, 6):
                attacker.send(
                    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo",'
                    b'"arguments":{"text":NaN,"n":Infinity}}}\n' % i
                )
            answers = [attacker.receive(timeout=5) for _ in range(5)]
            assert time.monotonic() - started < 2.0  # at once, not after the 2 s timeout
            assert sorted(a["id"] for a in answers) == [1, 2, 3, 4, 5]
            assert all(a["error"]["data"]["reason"] == "invalid_request" for a in answers)
        finally:
            attacker.close()
        other = RawSession(harness_env(sibling))
        try:
            other.initialize()
            answer = other.request(1, "tools/call", {"name": "up__echo", "arguments": {"text": "fine"}})
            assert answer["result"]["content"][0]["text"] == "fine"  # no circuit_open for the sibling
        finally:
            other.close()
        received = [json.loads(line) for line in record.read_text().splitlines()]
        assert len([r for r in received if r.get("name") == "echo"]) == 1  # only the sibling's call


def test_an_upstream_that_exits_at_once_is_noticed_at_once_with_its_code_and_stderr(tmp_path):
    crashy = [PY, "-c", "import sys; sys.stderr.write('crashing: bad flag --bogus\\n'); sys.exit(3)"]
    config = f"[mcp.crashy]\nargv = {toml_list(crashy)}\n\n[mcp.ok]\nargv = {toml_list(faulty())}\n"
    started = time.monotonic()
    with running(tmp_path, config, ready_within=20) as daemon:
        assert time.monotonic() - started < 10  # not held for the 30 s handshake timeout
        import apsw

        def exits():
            conn = apsw.Connection(
                f"file:{daemon.state / 'harness.db'}?mode=ro",
                flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY,
            )
            try:
                return [
                    json.loads(d)
                    for (d,) in conn.execute("SELECT data FROM events WHERE name = 'upstream.exited'")
                ]
            finally:
                conn.close()

        first = wait_until(exits, timeout=10)[0]
        assert first["returncode"] == 3
        assert "exited with code 3" in first["reason"] and "crashing: bad flag --bogus" in first["reason"]


def test_a_relative_state_dir_gives_agents_an_absolute_socket_that_works(tmp_path):
    dump = tmp_path / "agent.env"
    config = (
        f'[mcp.up]\nargv = {toml_list(faulty())}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(env_dumper(dump))}\nmcp_policy = "p"\n'
    )
    with running(tmp_path, config, state=Path("rel-state"), cwd=tmp_path):
        env = harness_env(dump)
        assert os.path.isabs(env["HARNESS_SOCKET"])
        session = RawSession(env)
        try:
            session.initialize()
            assert session.request(1, "tools/call", {"name": "up__echo", "arguments": {"text": "hi"}})[
                "result"
            ]
        finally:
            session.close()


def test_path_a_spawned_harness_runs_the_daemons_own_harness_command(tmp_path):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "harness").write_text("#!/bin/sh\nexit 9\n")
    (fake / "harness").chmod(0o755)
    dump = tmp_path / "agent.env"
    config = f"[harness.agent]\nargv = {toml_list(env_dumper(dump))}\n"
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{fake}{os.pathsep}{old}"
    try:
        with running(tmp_path, config):
            env = json.loads(wait_until(lambda: dump.exists() and dump.read_text(), timeout=30))
    finally:
        os.environ["PATH"] = old
    first = env["PATH"].split(os.pathsep)[0]
    assert Path(first, "harness").exists() and Path(first) != fake
    assert Path(first).resolve() == Path(PY).parent.resolve()
