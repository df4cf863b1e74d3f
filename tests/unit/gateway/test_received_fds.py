"""Descriptors a bridge passes arrive close-on-exec: a process the daemon starts later never holds an
agent's pipes (uvloop's spawn closes only close-on-exec descriptors)."""

from __future__ import annotations

import array
import os
import socket

from harness.gateway.downstream.agent_pipes import received_fds


def test_the_descriptors_a_bridge_passes_arrive_close_on_exec() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_end, write_end = os.pipe()
    got: list[int] = []
    try:
        for fd in (read_end, write_end):
            os.set_inheritable(fd, True)  # as a bridge's stdin and stdout are
        theirs.sendmsg(
            [b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [read_end, write_end]))]
        )
        data, got = received_fds(ours)
        assert data == b"F" and len(got) == 2
        assert not any(os.get_inheritable(fd) for fd in got)
    finally:
        for fd in (read_end, write_end, *got):
            os.close(fd)
        ours.close()
        theirs.close()
