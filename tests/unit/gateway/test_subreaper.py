"""The daemon as its descendants' subreaper (M2): an orphan stays in its tree, and is reaped."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
import time

import pytest

from harness.gateway.harnesses.subreaper import (
    OrphanReaper,
    child_groups,
    killed_children,
    set_subreaper,
    zombie_children,
)

PR_GET_CHILD_SUBREAPER = 37
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's"
)


def _is_subreaper() -> bool:
    flag = ctypes.c_int()
    assert ctypes.CDLL(None).prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0
    return bool(flag.value)


def _wait_zombie(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while pid not in zombie_children(os.getpid()):
        assert time.monotonic() < deadline, f"{pid} did not become a zombie child"
        time.sleep(0.01)


@linux_only
def test_an_orphan_of_a_subreaper_is_re_parented_to_it_not_to_init():
    read, write = os.pipe()
    assert set_subreaper(True)
    try:
        if (child := os.fork()) == 0:
            os.setsid()
            parent = os.getpid()
            if os.fork() == 0:  # the grandchild: wait until its parent is gone, then say who adopted it
                deadline = time.monotonic() + 10
                while os.getppid() == parent and time.monotonic() < deadline:
                    time.sleep(0.01)
                os.write(write, f"{os.getpid()} {os.getppid()}".encode())
                os._exit(0)
            os._exit(0)
        os.close(write)
        os.waitpid(child, 0)
        grandchild, adopted_by = map(int, os.read(read, 64).split())
        os.close(read)
        os.waitpid(grandchild, 0)  # it is this process's child now
    finally:
        set_subreaper(False)
    assert adopted_by == os.getpid()


def test_zombie_children_reads_the_children_files_and_each_childs_state(tmp_path):
    task = tmp_path / "50" / "task" / "50"
    task.mkdir(parents=True)
    (task / "children").write_text("51 52 53 ")
    for pid, state in ((51, "Z"), (52, "S"), (53, "Z")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (odd) name) {state} 50 50 50 0\n")
    assert zombie_children(50, tmp_path) == {51, 53}
    assert zombie_children(60, tmp_path) == set()


def test_killed_children_are_adopted_live_children_with_a_sigkill_pending(tmp_path):
    task = tmp_path / "50" / "task" / "50"
    task.mkdir(parents=True)
    kill, term = "0000000000000100", "0000000000004000"
    children = {  # pid: state, session, SigPnd, ShdPnd
        51: ("S", 50, kill, "0"),
        52: ("R", 50, "0", kill),
        53: ("S", 50, term, "0"),  # only SIGTERM pending
        55: ("Z", 50, "0", kill),  # dead already: a zombie's status may still show it
        56: ("S", 56, kill, "0"),  # leads its own session: a child the daemon started
    }
    (task / "children").write_text(" ".join(map(str, [*children, 54])))  # 54: gone
    for pid, (state, session, thread, shared) in children.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (x) {state} 50 {session} {session} 0\n")
        (tmp_path / str(pid) / "status").write_text(f"Name:\tx\nSigPnd:\t{thread}\nShdPnd:\t{shared}\n")
    assert killed_children(50, tmp_path) == {51, 52}
    assert child_groups(50, tmp_path) == {50, 56}  # each child's pgrp, as written above


@linux_only
def test_the_reaper_reaps_a_child_only_once_it_was_a_zombie_at_two_scans():
    if (pid := os.fork()) == 0:
        os._exit(0)
    _wait_zombie(pid)
    scans: list[set[int]] = []

    def scan(me: int) -> set[int]:
        found = zombie_children(me) & {pid}  # only ours: other tests' children are not this test's
        scans.append(found)
        return found

    async def scenario() -> int:
        reaper = OrphanReaper(interval=0.01, scan=scan)
        reaper.start()
        async with asyncio.timeout(10):
            while reaper.reaped == 0:
                await asyncio.sleep(0.01)
        reaper.stop()
        return reaper.reaped

    assert asyncio.run(scenario()) == 1
    assert scans[0] == {pid}  # seen once, left alone; reaped at the second sight
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _finish(reaper: OrphanReaper) -> None:
    assert set_subreaper(True)
    try:
        assert _is_subreaper()
        asyncio.run(reaper.finish())
        assert not _is_subreaper()
    finally:
        set_subreaper(False)


@linux_only
def test_finishing_reaps_a_zombie_orphan_at_once_and_stops_being_the_subreaper():
    if (pid := os.fork()) == 0:
        os._exit(0)
    _wait_zombie(pid)
    only_it = lambda me: zombie_children(me) & {pid}  # noqa: E731 (other tests' children are not ours)
    reaper = OrphanReaper(interval=3600, scan=only_it, killed=lambda me: set())
    _finish(reaper)  # no scan has seen it yet: finishing does not wait for two
    assert reaper.reaped == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@linux_only
def test_finishing_leaves_a_child_leading_its_own_session_to_whoever_waits_for_it():
    if (pid := os.fork()) == 0:  # as the daemon starts upstreams and harnesses: asyncio waits for them
        os.setsid()
        os._exit(0)
    _wait_zombie(pid)
    reaper = OrphanReaper(interval=3600, scan=lambda me: zombie_children(me) & {pid}, killed=lambda me: set())
    _finish(reaper)
    assert reaper.reaped == 0
    assert os.waitpid(pid, os.WNOHANG)[0] == pid  # still there for its waiter


@linux_only
def test_finishing_waits_for_an_orphan_killed_a_moment_ago_and_reaps_it():
    if (pid := os.fork()) == 0:
        time.sleep(60)
        os._exit(0)
    polls: list[set[int]] = []

    def killed(me: int) -> set[int]:
        if not polls:  # the kill lands as finishing begins: it must wait for the death, then reap
            os.kill(pid, signal.SIGKILL)
            found = {pid}
        else:
            found = killed_children(me) & {pid}
        polls.append(found)
        return found

    reaper = OrphanReaper(interval=3600, scan=lambda me: zombie_children(me) & {pid}, killed=killed)
    _finish(reaper)
    assert polls[0] == {pid} and polls[-1] == set()
    assert reaper.reaped == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
