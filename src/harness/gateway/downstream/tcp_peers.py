"""Which process is on the other end of a loopback TCP connection (Linux), as ``ss -p`` finds it.

The client's end of the connection is the socket whose local address is the connection's remote one
and whose remote address is the listener's. Its uid and inode come from the kernel's ``sock_diag``
netlink interface (one exact lookup, tens of microseconds) or, where that is missing, from the row of
``/proc/net/tcp`` (or ``tcp6``), which costs milliseconds and grows with the host's sockets. The
process is one whose ``/proc/<pid>/fd`` holds a link ``socket:[<inode>]``: the processes that owned
recent connections are looked at first (a client opens many), then every process. Connections
accepted together are looked up together, off the event loop, and a scan remembers every socket it
saw. Where anything cannot be read (no ``/proc``, another namespace, the client already gone) the
peer is unidentified: None. docs/control-socket.md has the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from collections.abc import Iterable
from typing import Any

from harness.gateway.downstream.peers import SUPPORTED

Address = tuple[Any, ...]
"""A socket address as ``getsockname``/``getpeername`` give it: (host, port[, flow, scope])."""
Pair = tuple[Address, Address]
"""(the client's address, the listener's address) of one accepted connection."""
Row = tuple[int, int]
"""(uid, inode) of a socket."""

RECENT_OWNERS = 32
"""Processes that owned recent connections, whose descriptors are looked at before all others'."""

_SOCK_DIAG = 4  # NETLINK_SOCK_DIAG
_BY_FAMILY = 20  # SOCK_DIAG_BY_FAMILY
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF


def _host(address: Address) -> str:
    return str(address[0]).split("%", 1)[0]


def proc_net_key(address: Address) -> str:
    """``address`` as ``/proc/net/tcp{,6}`` writes it: the address words in host byte order, in hex,
    then the port (``127.0.0.1:8080`` → ``0100007F:1F90``)."""
    host, port = _host(address), int(address[1])
    if ":" in host:
        words = struct.unpack("=4I", socket.inet_pton(socket.AF_INET6, host))
        return "".join(f"{w:08X}" for w in words) + f":{port:04X}"
    (word,) = struct.unpack("=I", socket.inet_aton(host))
    return f"{word:08X}:{port:04X}"


def _table(text: str) -> dict[tuple[str, str], Row]:
    """(local, remote) → (uid, inode) of every socket in a ``/proc/net/tcp{,6}`` text."""
    rows: dict[tuple[str, str], Row] = {}
    for line in text.splitlines()[1:]:
        # "sl: local rem st tx:rx tr:when retrnsmt uid timeout inode ..."
        fields = line.split(None, 10)
        if len(fields) > 9 and fields[9] != "0":
            rows[(fields[1], fields[2])] = (int(fields[7]), int(fields[9]))
    return rows


class SockDiag:
    """Exact lookups of TCP sockets by address over a ``NETLINK_SOCK_DIAG`` socket."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _SOCK_DIAG)
        self._sock.settimeout(1.0)
        self._seq = 0

    def row(self, client: Address, server: Address) -> Row | None:
        """The (uid, inode) of the socket at ``client`` connected to ``server``, or None."""
        family = socket.AF_INET6 if ":" in _host(client) else socket.AF_INET
        src = socket.inet_pton(family, _host(client)).ljust(16, b"\0")
        dst = socket.inet_pton(family, _host(server)).ljust(16, b"\0")
        sockid = struct.pack("!HH", int(client[1]), int(server[1])) + src + dst
        sockid += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
        request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + sockid
        self._seq += 1
        self._sock.send(struct.pack("=IHHII", 16 + len(request), _BY_FAMILY, 1, self._seq, 0) + request)
        while True:
            answer = self._sock.recv(8192)
            _length, kind, _flags, seq = struct.unpack_from("=IHHI", answer)
            if seq == self._seq:
                break
        if kind == _NLMSG_ERROR or len(answer) < 16 + 4 + 48 + 20:
            return None  # ENOENT: no such socket (any more)
        # inet_diag_msg: 4 bytes, the 48-byte socket id, expires, rqueue, wqueue, uid, inode
        uid, inode = struct.unpack_from("=II", answer, 16 + 4 + 48 + 12)
        return (uid, inode) if inode else None

    def close(self) -> None:
        self._sock.close()


class SocketOwners:
    """Socket inode → the pid holding it, from ``/proc/*/fd``."""

    def __init__(self, proc: str = "/proc") -> None:
        self._proc = proc
        self._known: dict[int, tuple[int, str]] = {}
        """inode → (pid, fd) as the last scans found them."""
        self._recent: dict[int, None] = {}
        """The latest owners found, oldest first."""
        self.scans = 0
        """Scans of every process (the costly kind)."""

    def pids(self, inodes: set[int]) -> dict[int, int]:
        """The pid holding each of ``inodes`` that is found: known ones are verified; for the rest
        the recent owners are scanned first, then (if some are still missing) every process."""
        found = {inode: pid for inode in inodes if (pid := self._still_held(inode)) is not None}
        for everyone in (False, True):
            missing = inodes - found.keys()
            if not missing:
                break
            if everyone:
                self.scans += 1
                self._known = self._scan(self._all())
            else:
                self._known |= self._scan(map(str, reversed(self._recent)))
            found |= {i: self._known[i][0] for i in missing if i in self._known}
        for pid in found.values():
            self._recent.pop(pid, None)
            self._recent[pid] = None
        while len(self._recent) > RECENT_OWNERS:
            del self._recent[next(iter(self._recent))]
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

    def _all(self) -> list[str]:
        try:
            return [name for name in os.listdir(self._proc) if name.isdigit()]
        except OSError:
            return []

    def _scan(self, pids: Iterable[str]) -> dict[int, tuple[int, str]]:
        found: dict[int, tuple[int, str]] = {}
        for name in pids:
            try:
                fds = os.listdir(f"{self._proc}/{name}/fd")
            except OSError:
                continue
            for fd in fds:
                link = self._link(int(name), fd)
                if link is not None and link.startswith("socket:["):
                    found.setdefault(int(link[8:-1]), (int(name), fd))
        return found


class TcpPeers:
    """Finds the (pid, uid) behind accepted loopback connections, in batches: the connections
    accepted while one lookup runs share the next."""

    def __init__(self, proc: str = "/proc", supported: bool = SUPPORTED, netlink: bool = True) -> None:
        self._proc = proc
        self._supported = supported
        self.owners = SocketOwners(proc)
        self._diag: SockDiag | None = None
        if supported and netlink:
            with contextlib.suppress(OSError):  # no sock_diag here: the /proc/net tables instead
                self._diag = SockDiag()
        self._pending: list[tuple[Pair, asyncio.Future[tuple[int, int] | None]]] = []
        self._worker: asyncio.Task[None] | None = None

    def close(self) -> None:
        """Release the netlink socket."""
        if self._diag is not None:
            self._diag.close()
            self._diag = None

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
        rows = self._rows(pairs)
        pids = self.owners.pids({row[1] for row in rows if row is not None})
        out: list[tuple[int, int] | None] = []
        for row in rows:
            pid = pids.get(row[1]) if row is not None else None
            out.append(None if row is None or pid is None else (pid, row[0]))
        return out

    def _rows(self, pairs: list[Pair]) -> list[Row | None]:
        if self._diag is not None:
            try:
                return [self._diag.row(client, server) for client, server in pairs]
            except OSError:
                self._diag.close()
                self._diag = None
        tables: dict[str, dict[tuple[str, str], Row]] = {}
        for name in {"tcp6" if ":" in _host(client) else "tcp" for client, _ in pairs}:
            try:
                with open(f"{self._proc}/net/{name}") as f:
                    tables[name] = _table(f.read())
            except (OSError, ValueError):
                tables[name] = {}
        keys = [(proc_net_key(client), proc_net_key(server)) for client, server in pairs]
        return [
            tables["tcp6" if ":" in _host(c) else "tcp"].get(k) for (c, _), k in zip(pairs, keys, strict=True)
        ]
