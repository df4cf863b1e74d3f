"""Which process is on the other end of a loopback TCP connection (Linux), as ``ss -p`` finds it.

The client's socket is the row of ``/proc/net/tcp`` (or ``tcp6``) whose local address is the
connection's remote one and whose remote address is the listener's: it gives the socket's uid and
inode. The process is the one with a ``/proc/<pid>/fd`` link ``socket:[<inode>]``. Reading a table
and scanning every process's descriptors cost a few milliseconds each (docs/control-socket.md has the
figures), so connections accepted together are looked up together, and a scan remembers every socket
it saw: a later connection whose socket it already knows is verified with one ``readlink``. Where
anything cannot be read (no ``/proc``, another namespace, the client already gone) the peer is
unidentified: None.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from typing import Any

from harness.gateway.downstream.peers import SUPPORTED

Address = tuple[Any, ...]
"""A socket address as ``getsockname``/``getpeername`` give it: (host, port[, flow, scope])."""


def proc_net_key(address: Address) -> str:
    """``address`` as ``/proc/net/tcp{,6}`` writes it: the address words in host byte order, in hex,
    then the port (``127.0.0.1:8080`` → ``0100007F:1F90``)."""
    host, port = str(address[0]).split("%", 1)[0], int(address[1])
    if ":" in host:
        words = struct.unpack("=4I", socket.inet_pton(socket.AF_INET6, host))
        return "".join(f"{w:08X}" for w in words) + f":{port:04X}"
    (word,) = struct.unpack("=I", socket.inet_aton(host))
    return f"{word:08X}:{port:04X}"


def _row(text: str, client: Address, server: Address) -> tuple[int, int] | None:
    """The (uid, inode) in a ``/proc/net/tcp{,6}`` text of the client's end of ``client`` → ``server``."""
    at = text.find(f" {proc_net_key(client)} {proc_net_key(server)} ")
    if at < 0:
        return None
    # "local rem st tx:rx tr:when retrnsmt uid timeout inode ...", from the match on.
    fields = text[at : text.find("\n", at)].split()
    try:
        uid, inode = int(fields[6]), int(fields[8])
    except (IndexError, ValueError):
        return None
    return (uid, inode) if inode else None


class SocketOwners:
    """Socket inode → the pid holding it, from scans of ``/proc/*/fd``."""

    def __init__(self, proc: str = "/proc") -> None:
        self._proc = proc
        self._known: dict[int, tuple[int, str]] = {}
        """inode → (pid, fd) as the last scan found them."""
        self.scans = 0

    def pids(self, inodes: set[int]) -> dict[int, int]:
        """The pid holding each of ``inodes`` that is found (one scan at most)."""
        found = {inode: pid for inode in inodes if (pid := self._still_held(inode)) is not None}
        if len(found) < len(inodes):
            self._known = self._scan()
            found |= {i: self._known[i][0] for i in inodes - found.keys() if i in self._known}
        return found

    def _still_held(self, inode: int) -> int | None:
        known = self._known.get(inode)
        if known is None or self._link(*known) != f"socket:[{inode}]":
            return None
        return known[0]

    def _link(self, pid: int, fd: str) -> str | None:
        try:
            return os.readlink(f"{self._proc}/{pid}/fd/{fd}")
        except OSError:
            return None

    def _scan(self) -> dict[int, tuple[int, str]]:
        self.scans += 1
        found: dict[int, tuple[int, str]] = {}
        try:
            entries = os.listdir(self._proc)
        except OSError:
            return found
        for name in entries:
            if not name.isdigit():
                continue
            try:
                fds = os.listdir(f"{self._proc}/{name}/fd")
            except OSError:
                continue
            for fd in fds:
                link = self._link(int(name), fd)
                if link is not None and link.startswith("socket:["):
                    found.setdefault(int(link[8:-1]), (int(name), fd))
        return found


Pair = tuple[Address, Address]
"""(the client's address, the listener's address) of one accepted connection."""


class TcpPeers:
    """Finds the (pid, uid) behind accepted loopback connections, in batches: the connections
    accepted while one lookup runs share the next (one read of the tables, one fd scan at most)."""

    def __init__(self, proc: str = "/proc", supported: bool = SUPPORTED) -> None:
        self._proc = proc
        self._supported = supported
        self.owners = SocketOwners(proc)
        self._pending: list[tuple[Pair, asyncio.Future[tuple[int, int] | None]]] = []
        self._worker: asyncio.Task[None] | None = None

    async def credentials(self, client: Address, server: Address) -> tuple[int, int] | None:
        """The (pid, uid) of the process at ``client`` connected to ``server``; None if unknown."""
        if not self._supported:
            return None
        answer: asyncio.Future[tuple[int, int] | None] = asyncio.get_running_loop().create_future()
        self._pending.append(((client, server), answer))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await answer

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                found = await asyncio.to_thread(self.identify, [pair for pair, _ in batch])
            except Exception:  # an unreadable /proc leaves every peer of the batch unidentified
                found = [None] * len(batch)
            for (_, answer), creds in zip(batch, found, strict=True):
                if not answer.done():
                    answer.set_result(creds)

    def identify(self, pairs: list[Pair]) -> list[tuple[int, int] | None]:
        """The (pid, uid) of each connection's client, or None (blocking: reads ``/proc``)."""
        tables: dict[str, str] = {}
        for name in {"tcp6" if ":" in str(client[0]) else "tcp" for client, _ in pairs}:
            try:
                with open(f"{self._proc}/net/{name}") as f:  # a few ms each: only the ones needed
                    tables[name] = f.read()
            except OSError:
                tables[name] = ""
        rows = [_row(tables["tcp6" if ":" in str(pair[0][0]) else "tcp"], *pair) for pair in pairs]
        pids = self.owners.pids({row[1] for row in rows if row is not None})
        out: list[tuple[int, int] | None] = []
        for row in rows:
            pid = pids.get(row[1]) if row is not None else None
            out.append(None if row is None or pid is None else (pid, row[0]))
        return out
