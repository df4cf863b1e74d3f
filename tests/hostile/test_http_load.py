"""The HTTP endpoint's acceptance bar in short (bench/http_load.py runs 1,000 half-open connections
and 100,000 fuzzed requests): under a bounded local attack with no token, a harness's client with its
own token still gets through in under a second, the daemon's stderr grows by less than 10 KB, and no
traceback is printed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "http_load.py"


def _bench():
    if str(BENCH.parent) not in sys.path:  # the script imports bench/dev_path, as it does when run
        sys.path.append(str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_http_load", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_http_load"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # about 20 s: 1,000 half-open connections, 10,000 fuzzed requests
def test_1000_half_open_connections_and_10000_fuzzed_requests_leave_a_token_client_served_within_1_s(
    tmp_path,
):
    figures = _bench().http_load(tmp_path, half_open=1000, fuzzed=10_000, seed=3, seconds=120)
    assert figures["probe_calls_during"] and figures["probe_failures"] == 0, figures
    assert figures["probe_slowest_s"] < 1.0, figures
    assert figures["stderr_growth_bytes"] < 10_240 and figures["tracebacks"] == 0, figures
    assert figures["fuzz_outcomes"].get("-1", 0) == 0 and figures["fuzzed_sent"] == 10_000, figures
    assert figures["daemon_alive_at_end"] and figures["daemon_exit"] == 0, figures
    assert sum(figures["half_open_ends"].values()) == 1000 and figures["half_open_ends"].get("held", 0) == 0
