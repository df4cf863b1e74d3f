"""Attributing a control-socket peer from its pid (M2): a fake /proc, and this very process."""

from __future__ import annotations

import os
import socket

import pytest

from harness.gateway.downstream.peers import SUPPORTED, Attributor, peer_credentials, proc_stat

DAEMON = 100
# pid: (parent, session)
TREE = {
    1: (0, 1),  # init
    100: (1, 100),  # the daemon
    200: (100, 200),  # harness "agent" (leads its own session)
    201: (200, 200),  # its shell
    202: (201, 200),  # `harness restart` run by the shell
    203: (100, 203),  # a setsid + double-fork orphan of the agent, adopted by the daemon
    204: (1, 200),  # an orphan re-parented to init that kept the agent's session
    300: (100, 300),  # an upstream
    301: (300, 300),  # its child
    400: (1, 400),  # the operator's shell
    401: (400, 400),  # `harness restart` run by the operator
    500: (1, 500),  # harness "gone": exited, so not in the running map
}


def _attributor() -> Attributor:
    return Attributor(lambda: {200: "agent"}, daemon_pid=DAEMON, stat=TREE.get, supported=True)


@pytest.mark.parametrize(
    ("pid", "kind", "harness"),
    [
        (200, "harness", "agent"),
        (202, "harness", "agent"),
        (204, "harness", "agent"),
        (203, "daemon", None),
        (301, "daemon", None),
        (401, "outside", None),
        (999, "unknown", None),  # gone before it could be looked up
        (0, "unknown", None),  # another pid namespace
    ],
)
def test_a_peer_is_attributed_by_its_ancestry_and_session(pid, kind, harness):
    origin = _attributor().origin((pid, 1000))
    assert (origin.kind, origin.harness) == (kind, harness)


def test_without_peer_credentials_a_peer_is_unverified_only_where_the_platform_has_none():
    assert _attributor().origin(None).kind == "unknown"
    assert Attributor(dict, supported=False).origin(None).kind == "unverified"


def test_a_cycle_in_a_broken_proc_is_of_unknown_origin():
    looping = Attributor(dict, daemon_pid=1, stat={7: (8, 7), 8: (7, 8)}.get, supported=True)
    assert looping.origin((7, 0)).kind == "unknown"


@pytest.mark.skipif(not SUPPORTED, reason="SO_PEERCRED and /proc are Linux's")
def test_the_kernel_names_this_process_as_the_peer_and_it_is_outside_a_daemon_it_did_not_start():
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        creds = peer_credentials(a)
    assert creds == (os.getpid(), os.getuid())
    assert Attributor(dict, daemon_pid=-1).origin(creds).kind == "outside"
    assert Attributor(dict, daemon_pid=os.getppid()).origin(creds).kind == "daemon"


def test_proc_stat_reads_the_parent_and_the_session_even_with_parentheses_in_the_name(tmp_path):
    (tmp_path / "123").mkdir()
    (tmp_path / "123" / "stat").write_text("123 (a) b (c)) S 45 46 47 0 -1 4194560 100\n")
    assert proc_stat(123, str(tmp_path)) == (45, 47)
    assert proc_stat(124, str(tmp_path)) is None


@pytest.mark.skipif(not SUPPORTED, reason="/proc is Linux's")
def test_proc_stat_of_this_process_is_its_parent_and_session():
    assert proc_stat(os.getpid()) == (os.getppid(), os.getsid(0))
