"""``harness mcp``: the stdio bridge an agent CLI launches. Standard library only.

It connects to the daemon's control socket (``HARNESS_SOCKET``) and sends one preamble line with the
bridge protocol version and ``HARNESS_MCP_TOKEN``. Bridge protocol 2 then steps out of the data path:
when stdin and stdout are pipes or sockets (not a terminal, not a file) it offers them
(``"fds": true``); a daemon that answers ``{"harness_fds": "send"}`` gets both descriptors over the
socket (``SCM_RIGHTS``) and from then on reads and writes the agent's pipes itself, while the bridge
closes its copies and only waits for the daemon's ``{"harness_exit": N}`` line (or the socket's end:
the daemon died, and the agent's pipes, which only the daemon held, gave the agent EOF at once). It
waits as a small shell (:data:`WAITER`, ``exec``: the same pid), not as this interpreter, since it
stays alive beside the agent for the whole session.
Otherwise (``{"harness_fds": "copy"}``, ``HARNESS_BRIDGE_COPY=1``, an older daemon that speaks only
protocol 1) the bridge relays stdin → socket and socket → stdout unchanged until either side ends.
A daemon that refuses the session (the socket is full, a bad preamble) answers one line
``{"harness_error": "…"}`` first: the bridge prints it on stderr, never on the agent's stdout, and
exits 1.
"""

from __future__ import annotations

import array
import json
import os
import socket
import stat
import sys

BRIDGE_PROTOCOL = 2
COPYING_PROTOCOL = 1
"""What the bridge speaks to a daemon that refuses protocol 2: copying, no first line."""
COPY_ENV = "HARNESS_BRIDGE_COPY"
"""Set to 1: never pass the descriptors (the bridge copies bytes)."""
SHELL = "/bin/sh"
WAITER = r"""IFS= read -r line
case $line in
'{"harness_exit":'*'}') n=${line#*:}; n=${n%\}}; n=${n# }; n=${n% } ;;
*) n= ;;
esac
case ${n#-} in
''|*[!0-9]*) echo 'harness mcp: the daemon closed the connection' >&2; exit 1 ;;
esac
exit $((n & 255))
"""
"""What the bridge becomes once it handed the pipes over (``exec``, same pid): a shell that reads the
daemon's ``{"harness_exit": N}`` line from the socket (its stdin now) and exits N, as
:func:`_hand_over` would, in a fraction of an interpreter's memory (bench/README.md, issue 26)."""
CHUNK = 1 << 16
REFUSAL = b'{"harness_error"'
MAX_REFUSAL_BYTES = 1 << 16


def _socket_path(state_dir: str | None) -> str:
    explicit = os.environ.get("HARNESS_SOCKET")
    if explicit:
        return explicit
    if state_dir:
        return os.path.join(state_dir, "harness.sock")
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG spec says to ignore it
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "harness", "harness.sock")


def _refusal(first: bytes) -> str | None:
    """The daemon's refusal in its first line (None: the line is not one)."""
    line = first.split(b"\n", 1)[0]
    try:
        reason = json.loads(line)["harness_error"]
    except (ValueError, KeyError, TypeError):
        return line.decode(errors="replace")
    return str(reason)


def _pump_to_stdout(sock: socket.socket) -> str | None:
    """Copy the socket to stdout; returns the daemon's refusal instead when its first line is one."""
    out = sys.stdout.buffer.raw if hasattr(sys.stdout.buffer, "raw") else sys.stdout.buffer
    fd = out.fileno()
    first: bytes | None = b""  # held back while it may still turn out to be a refusal
    try:
        while data := sock.recv(CHUNK):
            if first is not None:
                first += data
                if first.startswith(REFUSAL) or REFUSAL.startswith(first):
                    if b"\n" in first or len(first) > MAX_REFUSAL_BYTES:
                        return _refusal(first)
                    continue
                data, first = first, None
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:
        pass
    if first and (first.startswith(REFUSAL) or REFUSAL.startswith(first)):
        return _refusal(first)
    return None


def _pump_from_stdin(sock: socket.socket, stdin_closed: list[bool]) -> None:
    """Copy stdin to the socket; at its end, append to ``stdin_closed`` and shut the socket's sending side."""
    fd = sys.stdin.fileno()
    try:
        while data := os.read(fd, CHUNK):
            sock.sendall(data)
    except OSError:
        pass
    stdin_closed.append(True)
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _passable(fds: tuple[int, int]) -> bool:
    """Whether stdin and stdout can be handed to the daemon: pipes or sockets, on a system with
    ``SCM_RIGHTS``, not turned off by ``HARNESS_BRIDGE_COPY=1``."""
    if os.environ.get(COPY_ENV) == "1" or not hasattr(socket, "SCM_RIGHTS"):
        return False
    try:
        modes = [os.fstat(fd).st_mode for fd in fds]
    except OSError:
        return False
    return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in modes) and not any(map(os.isatty, fds))


def _connect(path: str, version: int, offer: bool) -> socket.socket | str:
    """A connection with its preamble sent, or why there is none."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        return f"no Harness daemon is listening at {path} ({exc.strerror or exc})"
    preamble: dict[str, object] = {
        "harness_bridge": version,
        "kind": "mcp",
        "token": os.environ.get("HARNESS_MCP_TOKEN", ""),
    }
    if version >= BRIDGE_PROTOCOL:
        preamble["fds"] = offer
    try:
        sock.sendall(json.dumps(preamble).encode() + b"\n")
    except OSError:
        pass  # a refusal may have closed the connection already: its line is still to be read
    return sock


def _first_line(sock: socket.socket) -> bytes:
    """The daemon's first line, read a byte at a time (nothing after it may be consumed here)."""
    line = b""
    while len(line) <= MAX_REFUSAL_BYTES and not line.endswith(b"\n"):
        try:
            byte = sock.recv(1)
        except OSError:
            break
        if not byte:
            break
        line += byte
    return line


def _hand_over(sock: socket.socket, fds: tuple[int, int]) -> int:
    """Pass stdin and stdout to the daemon, let go of them, and wait for the session's end: in
    :data:`WAITER` when it can be run, else here."""
    sock.sendmsg([b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in fds:
        os.dup2(null, fd)  # this process's copies are gone: only the daemon holds the agent's pipes
    os.close(null)
    if fds == (0, 1):  # this process's own stdio (not an embedding's): become the waiter
        os.dup2(sock.fileno(), 0)
        try:
            os.execv(SHELL, ["harness mcp", "-c", WAITER, "harness mcp"])  # noqa: S606 - the fixed waiter
        except OSError:
            os.dup2(1, 0)  # no shell: wait here (stdin the null device again, as stdout is)
    ending = _first_line(sock)
    sock.close()
    try:
        status = json.loads(ending)["harness_exit"]
    except (ValueError, KeyError, TypeError):
        print("harness mcp: the daemon closed the connection", file=sys.stderr)
        return 1
    return status if type(status) is int else 1


def run(state_dir: str | None = None) -> int:
    """Serve one MCP session: hand the agent's pipes to the daemon, or relay until the daemon closes
    the connection (after stdin closed, or on its own)."""
    path = _socket_path(state_dir)
    try:
        fds: tuple[int, int] | None = (sys.stdin.fileno(), sys.stdout.fileno())
    except (OSError, ValueError):  # no real descriptors (an embedding that replaced sys.stdin)
        fds = None
    connected = _connect(path, BRIDGE_PROTOCOL, fds is not None and _passable(fds))
    if isinstance(connected, str):
        print(f"harness mcp: {connected}", file=sys.stderr)
        return 1
    sock = connected
    first = _first_line(sock)
    if first.startswith(b'{"harness_error"') and b"bridge protocol" in first:
        sock.close()  # a daemon that speaks only protocol 1: copy
        connected = _connect(path, COPYING_PROTOCOL, False)
        if isinstance(connected, str):
            print(f"harness mcp: {connected}", file=sys.stderr)
            return 1
        sock = connected
    elif first.startswith(b'{"harness_fds"'):
        if json.loads(first).get("harness_fds") == "send" and fds is not None:
            return _hand_over(sock, fds)
    elif first:
        sock.close()
        print(f"harness mcp: the daemon refused the session: {_refusal(first)}", file=sys.stderr)
        return 1
    return _relay(sock)


def _relay(sock: socket.socket) -> int:
    """Copy stdin → socket and socket → stdout until the daemon closes the connection."""
    import threading  # only this mode has a second thread: a bridge that hands over never loads it

    stdin_closed: list[bool] = []
    threading.Thread(target=_pump_from_stdin, args=(sock, stdin_closed), daemon=True).start()
    refusal = _pump_to_stdout(sock)
    sock.close()
    if refusal is not None:
        print(f"harness mcp: the daemon refused the session: {refusal}", file=sys.stderr)
        return 1
    if stdin_closed:
        return 0
    print("harness mcp: the daemon closed the connection", file=sys.stderr)
    return 1
