"""The fuzzer of issue 9 in short (bench/fuzz.py runs 100,000 messages): a real daemon fed hostile
MCP traffic by a read-only harness keeps running, answers every well-formed request, records one
row per call, and a sibling session through a real ``harness mcp`` bridge is served throughout."""

from __future__ import annotations

import pytest

from devtools.fuzz_daemon import fuzz_daemon


@pytest.mark.acceptance
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_fuzz_4000_hostile_messages_no_crash_no_hang_no_lost_row_healthy_sibling(tmp_path, seed):
    figures = fuzz_daemon(tmp_path, messages=4000, seed=seed, per_session=1000, quiet=True)
    assert figures["sessions"] == 4  # each handshake revision once
    assert figures["hangs"] == [] and figures["session_drops"] == 0
    assert figures["answered"] == figures["owed_answers"] > 0
    assert figures["fuzzer_rows"] == figures["calls_sent"] > 0
    assert figures["sibling_calls"] == figures["sibling_rows"] > 0 and figures["sibling_failures"] == []
    assert figures["daemon_alive_at_end"] and figures["daemon_exit"] == 0
    assert figures["tracebacks"] == 0, figures["first_traceback"]
    assert figures["ok"]
