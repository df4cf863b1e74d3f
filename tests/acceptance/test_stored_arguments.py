"""Long arguments sent by a real agent are stored as JSON, cut inside the string, with the cut recorded."""

from __future__ import annotations

import json

import apsw

from harness.gateway.evidence.args_cap import ARGS_CAP_BYTES, CUT
from harness.gateway.evidence.redaction import canonical_json
from support import FAULTY_UPSTREAM, PY, probe_argv, read_out, toml_list, wait_until


def test_a_call_with_arguments_over_4_kib_is_stored_as_json_marked_cut_with_its_size(start_daemon, tmp_path):
    arguments = {"text": "x = 1\n" * 2000}
    plan = [{"op": "call", "name": "up__echo", "arguments": arguments}]
    agent = probe_argv(tmp_path / "out.json", "--steps", json.dumps(plan))
    daemon = start_daemon(
        f'[mcp.up]\nargv = {toml_list([PY, str(FAULTY_UPSTREAM)])}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(agent)}\nmcp_policy = "p"\n'
    )
    read_out(tmp_path / "out.json")

    def row() -> tuple | None:
        conn = apsw.Connection(str(daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return conn.execute(
                "SELECT args, args_truncated, args_bytes FROM call_log WHERE tool = 'echo'"
            ).fetchone()
        finally:
            conn.close()

    args, truncated, size = wait_until(row, message="the call's row")
    assert json.loads(args)["text"].endswith(CUT) and len(args.encode()) <= ARGS_CAP_BYTES
    assert (truncated, size) == (1, len(canonical_json(arguments).encode()))
    assert daemon.calls()[0]["args_truncated"] == 1
