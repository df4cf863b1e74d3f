"""Finding the process behind a loopback TCP connection (``/proc/net/tcp`` and ``/proc/*/fd``), and
the per-uid cap of the HTTP endpoint's connection counts."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

import pytest

from harness.gateway.downstream.limits import ConnectionCounts, Limits
from harness.gateway.downstream.peers import SUPPORTED
from harness.gateway.downstream.tcp_peers import TcpPeers, proc_net_key
from harness.rules.access import PeerOrigin


def test_an_address_is_written_as_proc_net_tcp_writes_it():
    assert proc_net_key(("127.0.0.1", 8080)) == (
        "0100007F:1F90" if sys.byteorder == "little" else "7F000001:1F90"
    )
    assert proc_net_key(("::1", 80, 0, 0)).endswith(":0050") and len(proc_net_key(("::1", 80))) == 37


@pytest.mark.skipif(not SUPPORTED, reason="Linux /proc only")
@pytest.mark.parametrize("netlink", [True, False], ids=["sock_diag", "proc_net_tcp"])
@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_the_process_and_uid_behind_a_loopback_connection_are_found_in_one_batch(family, netlink):
    host = "127.0.0.1" if family == socket.AF_INET else "::1"
    with socket.socket(family) as server:
        server.bind((host, 0))
        server.listen(16)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2]))); s.recv(1)",
                host,
                str(server.getsockname()[1]),
            ]
        )
        try:
            accepted = [server.accept()[0]]
            mine = socket.create_connection(server.getsockname()[:2])
            accepted.append(server.accept()[0])
            peers = TcpPeers(netlink=netlink)

            async def look() -> list:
                return await asyncio.gather(
                    *(peers.credentials(s.getpeername(), s.getsockname()) for s in accepted)
                )

            found = asyncio.run(look())
            assert found == [(child.pid, os.getuid()), (os.getpid(), os.getuid())]
            assert peers.owners.scans == 1  # both in one scan
            mine.close()
            peers.close()
        finally:
            for s in accepted:
                s.close()
            child.wait(10)


def test_a_connection_that_no_table_lists_is_unidentified(tmp_path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "tcp").write_text("  sl  local_address rem_address\n")
    peers = TcpPeers(proc=str(tmp_path), supported=True, netlink=False)
    assert peers.identify([(("127.0.0.1", 5000), ("127.0.0.1", 80))]) == [None]
    assert TcpPeers(supported=False).identify([]) == []


def test_a_foreign_uid_is_capped_apart_from_the_daemons_own_uid():
    counts = ConnectionCounts(Limits(total=100, per_pid=50, outside=100, per_uid=2), own_uid=1000)
    foreign = [PeerOrigin("outside", pid, 65534) for pid in (1, 2, 3)]
    assert counts.acquire(foreign[0]) is None and counts.acquire(foreign[1]) is None
    assert "uid 65534 already has 2 connections open" in (counts.acquire(foreign[2]) or "")
    assert all(counts.acquire(PeerOrigin("outside", 10 + i, 1000)) is None for i in range(5))
    counts.release(foreign[0])
    assert counts.acquire(foreign[2]) is None
