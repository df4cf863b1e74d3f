"""Caps, attribution and rate-limited logging of the control socket (M6), in memory."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest
from connection_support import FakeTransport

from harness.gateway.downstream.control_socket import ACCEPT_OUT_OF_RESOURCES, ControlSocket
from harness.gateway.downstream.limits import (
    MAX_TOTAL,
    MIN_TOTAL,
    ConnectionCounts,
    Limits,
    RateLimitedLog,
    total_cap,
)
from harness.gateway.downstream.peers import Attributor
from harness.rules.access import PeerOrigin


class SocketTransport(FakeTransport):
    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def get_extra_info(self, name, default=None):
        return self._sock if name == "socket" else default


def _control_socket(limits: Limits, logger: logging.Logger | None = None) -> ControlSocket:
    async def control(command, args, caller):
        return None

    return ControlSocket(
        new_session=lambda *_: None,  # type: ignore[arg-type,return-value]
        on_session=lambda _s: None,
        control=control,
        identities=dict,
        harness_pids=dict,
        limits=limits,
        attributor=Attributor(dict, daemon_pid=-1),  # this test process is outside any daemon
        logger=logger or logging.getLogger("test.control_socket"),
    )


@pytest.mark.parametrize(
    ("nofile", "cap"), [(40, MIN_TOTAL), (256, 64), (1024, 256), (20_000, MAX_TOTAL), (-1, MAX_TOTAL)]
)
def test_the_total_cap_is_a_quarter_of_the_descriptor_limit_within_bounds(nofile, cap):
    assert total_cap(nofile) == cap


def test_the_total_cap_of_this_process_leaves_three_quarters_of_its_descriptors():
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert total_cap() <= max(MIN_TOTAL, soft // 4)


def test_one_process_gets_at_most_its_per_pid_cap_and_a_release_frees_a_place():
    counts = ConnectionCounts(Limits(total=100, per_pid=2))
    origin = PeerOrigin("outside", 7, 1000)
    assert counts.acquire(origin) is None and counts.acquire(origin) is None
    assert "process 7 already has 2 connections open" in (counts.acquire(origin) or "")
    assert counts.acquire(PeerOrigin("outside", 8, 1000)) is None  # another process is not affected
    counts.release(origin)
    assert counts.acquire(origin) is None
    assert counts.total == 3


def test_a_harness_tree_fills_only_its_own_bucket_not_the_operators():
    counts = ConnectionCounts(Limits(total=100, per_pid=100, per_harness=3, outside=3))
    for pid in range(3):
        assert counts.acquire(PeerOrigin("harness", 100 + pid, 1000, "attacker")) is None
    assert "attacker already has 3" in (counts.acquire(PeerOrigin("harness", 200, 1000, "attacker")) or "")
    assert counts.acquire(PeerOrigin("harness", 300, 1000, "live")) is None
    assert counts.acquire(PeerOrigin("outside", 400, 1000)) is None


def test_the_total_cap_refuses_before_the_origin_is_even_looked_up():
    counts = ConnectionCounts(Limits(total=1))
    assert counts.acquire(PeerOrigin("outside", 1, 0)) is None
    assert "the control socket is full (1 connections)" in (counts.refuse_early(2) or "")


def test_refusals_are_logged_once_per_second_per_reason_with_the_count_of_the_rest(caplog):
    now = [0.0]
    limited = RateLimitedLog(logging.getLogger("test.rate"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="test.rate"):
        assert limited.note("full", "refused 1")
        for i in range(999):
            assert not limited.note("full", f"refused {i + 2}")
        assert limited.note("preamble", "other reason")  # another reason has its own budget
        now[0] = 1.0
        assert limited.note("full", "refused 1001")
    assert [r.getMessage() for r in caplog.records] == [
        "refused 1",
        "other reason",
        "refused 1001 (and 999 more like it since the last such line)",
    ]


def test_a_flood_of_connections_from_one_process_is_capped_and_refused_with_a_reason(caplog):
    async def scenario() -> tuple[list[object], int]:
        door = _control_socket(Limits(total=50, per_pid=4))
        pairs = [socket.socketpair(socket.AF_UNIX) for _ in range(40)]
        try:
            admitted = [door.admit(SocketTransport(a)) for a, _b in pairs]
            return admitted, door.counts.total
        finally:
            for a, b in pairs:
                a.close()
                b.close()

    with caplog.at_level(logging.INFO, logger="test.control_socket"):
        admitted, total = asyncio.run(scenario())
    origins = [a for a in admitted if isinstance(a, PeerOrigin)]
    assert len(origins) == 4 and total == 4
    assert all(o.kind == "outside" for o in origins)
    refusals = [a for a in admitted if isinstance(a, str)]
    assert len(refusals) == 36 and all("already has 4 connections open" in r for r in refusals)
    assert len(caplog.records) == 1  # 36 refusals within a second: one line


def test_accept_running_out_of_descriptors_is_one_quiet_line_not_a_traceback_per_try(caplog):
    door = _control_socket(Limits(total=10))
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.INFO, logger="test.control_socket"):
            for _ in range(1000):
                door._loop_exception(
                    loop,
                    {"message": ACCEPT_OUT_OF_RESOURCES, "exception": OSError(24, "Too many open files")},
                )
    finally:
        loop.close()
    assert len(caplog.records) == 1
    assert caplog.records[0].exc_info is None
    assert "Too many open files" in caplog.records[0].getMessage()


@pytest.mark.parametrize(("total", "harness", "outside"), [(4096, 64, 256), (256, 64, 128), (64, 16, 32)])
def test_no_one_origin_may_take_every_place_however_small_the_total(total, harness, outside):
    limits = Limits.sized(total)
    assert (limits.per_harness, limits.unattributed, limits.outside) == (harness, harness, outside)
    assert limits.outside + limits.unattributed + limits.per_harness <= total
