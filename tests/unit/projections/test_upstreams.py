"""upstreams: one row of current state per upstream, folded from lifecycle events."""

from __future__ import annotations

from projection_support import fold_into, memory_store, tool
from tests_support import catalog

from harness.events import DaemonStarted, UpstreamExited, UpstreamStarted, UpstreamStateChanged


def rows(conn):
    cursor = conn.execute("SELECT * FROM upstreams ORDER BY upstream")
    names = [d[0] for d in cursor.getdescription()]
    return {r[0]: dict(zip(names, r, strict=True)) for r in cursor}


def _state(ts: float, upstream: str, state: str, reason: str, restarts: int = 0) -> UpstreamStateChanged:
    delay = 1.0 if state == "restarting" else None
    return UpstreamStateChanged(
        ts=ts, upstream=upstream, state=state, restarts=restarts, delay_s=delay, reason=reason
    )


def test_an_upstream_goes_starting_up_restarting_and_up_again_counting_restarts():
    conn = memory_store()
    fold_into(conn, [UpstreamStarted(ts=1, upstream="git", pid=10, command="c")])
    assert rows(conn)["git"]["state"] == "starting"
    fold_into(conn, [catalog("git", [tool("a"), tool("b")], ts=2), _state(2, "git", "up", "initialized")])
    git = rows(conn)["git"]
    assert (git["state"], git["tool_count"], git["protocol_version"], git["breaker"]) == (
        "up",
        2,
        "2025-11-25",
        "closed",
    )
    fold_into(
        conn,
        [
            UpstreamExited(ts=3, upstream="git", pid=10, returncode=-9, reason="killed by signal 9"),
            _state(3, "git", "restarting", "exited", restarts=1),
        ],
    )
    assert (rows(conn)["git"]["state"], rows(conn)["git"]["last_exit_code"]) == ("restarting", -9)
    fold_into(
        conn,
        [
            UpstreamStarted(ts=4, upstream="git", pid=11, command="c"),
            catalog("git", [tool("a")], ts=5),
            _state(5, "git", "up", "initialized", restarts=1),
        ],
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
            _state(2, "web", "stopped", "reload"),
            UpstreamStarted(ts=3, upstream="web", pid=2, command="c"),
            catalog("web", [], ts=4),
            _state(4, "web", "up", "initialized"),
            DaemonStarted(ts=5, pid=99, version="x", config_files=()),
        ],
    )
    web = rows(conn)["web"]
    assert (web["state"], web["restarts"]) == ("stopped", 0)


def test_the_state_is_the_supervisors_a_fetched_catalogue_alone_does_not_make_an_upstream_up():
    conn = memory_store()
    fold_into(
        conn, [UpstreamStarted(ts=1, upstream="git", pid=10, command="c"), catalog("git", [tool("a")], ts=2)]
    )
    assert (rows(conn)["git"]["state"], rows(conn)["git"]["tool_count"]) == ("starting", 1)
    fold_into(
        conn,
        [
            _state(3, "git", "up", "initialized"),
            UpstreamExited(ts=4, upstream="git", pid=10, returncode=0, reason="restart requested"),
            _state(4, "git", "starting", "restart requested"),
            UpstreamStarted(ts=5, upstream="git", pid=11, command="c"),
        ],
    )
    assert (rows(conn)["git"]["state"], rows(conn)["git"]["restarts"]) == ("starting", 0)


def test_supervision_and_breaker_events_set_failed_and_the_breaker_state():
    from harness.events import CircuitClosed, CircuitOpened

    conn = memory_store()
    fold_into(
        conn,
        [
            UpstreamStarted(ts=1, upstream="git", pid=10, command="c"),
            catalog("git", [tool("a")], ts=2),
            _state(2, "git", "up", "initialized"),
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
