"""upstreams: one row of current state per upstream, folded from lifecycle events."""

from __future__ import annotations

from projection_support import fold_into, memory_store, tool
from tests_support import catalog

from harness.events import DaemonStarted, UpstreamExited, UpstreamStarted


def rows(conn):
    cursor = conn.execute("SELECT * FROM upstreams ORDER BY upstream")
    names = [d[0] for d in cursor.getdescription()]
    return {r[0]: dict(zip(names, r, strict=True)) for r in cursor}


def test_an_upstream_goes_starting_up_restarting_and_up_again_counting_restarts():
    conn = memory_store()
    fold_into(conn, [UpstreamStarted(ts=1, upstream="git", pid=10, command="c")])
    assert rows(conn)["git"]["state"] == "starting"
    fold_into(conn, [catalog("git", [tool("a"), tool("b")], ts=2)])
    git = rows(conn)["git"]
    assert (git["state"], git["tool_count"], git["protocol_version"], git["breaker"]) == (
        "up",
        2,
        "2025-11-25",
        "closed",
    )
    fold_into(conn, [UpstreamExited(ts=3, upstream="git", pid=10, returncode=-9, reason="exited")])
    assert (rows(conn)["git"]["state"], rows(conn)["git"]["last_exit_code"]) == ("restarting", -9)
    fold_into(
        conn, [UpstreamStarted(ts=4, upstream="git", pid=11, command="c"), catalog("git", [tool("a")], ts=5)]
    )
    git = rows(conn)["git"]
    assert (git["state"], git["pid"], git["restarts"], git["tool_count"], git["updated_ts"]) == (
        "up",
        11,
        1,
        1,
        5,
    )


def test_a_stop_is_not_a_restart_and_a_new_daemon_starts_from_stopped():
    conn = memory_store()
    fold_into(
        conn,
        [
            UpstreamStarted(ts=1, upstream="web", pid=1, command="c"),
            UpstreamExited(ts=2, upstream="web", pid=1, returncode=0, reason="stopped"),
            UpstreamStarted(ts=3, upstream="web", pid=2, command="c"),
            catalog("web", [], ts=4),
            DaemonStarted(ts=5, pid=99, version="x", config_files=()),
        ],
    )
    web = rows(conn)["web"]
    assert (web["state"], web["restarts"]) == ("stopped", 0)


def test_supervision_and_breaker_events_set_failed_and_the_breaker_state():
    from harness.events import CircuitClosed, CircuitOpened, UpstreamStateChanged

    conn = memory_store()
    fold_into(
        conn,
        [
            UpstreamStarted(ts=1, upstream="git", pid=10, command="c"),
            catalog("git", [tool("a")], ts=2),
            CircuitOpened(ts=3, upstream="git", failures=5, cooldown_s=30.0),
        ],
    )
    assert (rows(conn)["git"]["state"], rows(conn)["git"]["breaker"]) == ("up", "open")
    fold_into(
        conn,
        [
            CircuitClosed(ts=4, upstream="git"),
            UpstreamStateChanged(
                ts=5, upstream="git", state="failed", restarts=5, delay_s=None, reason="flapping"
            ),
        ],
    )
    git = rows(conn)["git"]
    assert (git["state"], git["breaker"], git["updated_ts"]) == ("failed", "closed", 5)
