"""Harness supervision through a real daemon: a harness that fails is restarted as a new run with a
new token under the upstreams' backoff policy; one that finishes (status 0) is left alone."""

from __future__ import annotations

import pytest

from support import wait_until

pytestmark = pytest.mark.acceptance

FAILS_ONCE = "if [ -e ran ]; then exec sleep 600; else touch ran; exit 3; fi"


@pytest.mark.slow
def test_a_failed_harness_restarts_as_a_new_run_and_a_finished_one_stays_exited(start_daemon, tmp_path):
    (tmp_path / "w").mkdir()
    daemon = start_daemon(
        f'[harness.flaky]\nargv = ["sh", "-c", "{FAILS_ONCE}"]\nworkdir = "{tmp_path / "w"}"\n\n'
        '[harness.done]\nargv = ["true"]\n'
    )
    restarting = wait_until(lambda: daemon.events("harness.state_changed"), timeout=15)
    [changed] = restarting
    assert (changed["harness"], changed["state"], changed["returncode"]) == ("flaky", "restarting", 3)
    assert 0.7 <= changed["delay_s"] <= 1.3 and changed["restarts"] == 1
    spawned = wait_until(
        lambda: len(s := [e for e in daemon.events("harness.spawned") if e["harness"] == "flaky"]) == 2 and s,
        timeout=15,
    )
    assert spawned[0]["run_id"] != spawned[1]["run_id"]  # a new run (and with it a new token)
    running = wait_until(lambda: (h := daemon.harnesses())["flaky"]["state"] == "running" and h)
    assert running["flaky"]["run_id"] == spawned[1]["run_id"]
    assert running["done"]["state"] == "exited"  # status 0: done, not restarted
    assert [e["harness"] for e in daemon.events("harness.state_changed")] == ["flaky"]
