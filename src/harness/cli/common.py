"""Shared pieces of the CLI: global options, durations, the control-socket client."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.config.durations import DurationOutOfRange, parse_duration
from harness.gateway.state_dir import StatePaths
from harness.store.location import default_state_dir


class CliError(Exception):
    """A failure reported as one line on stderr with exit code 1."""


class NoDaemon(CliError):
    """No daemon accepts connections on the state dir's socket."""


class UsageError(CliError):
    """A command line the command cannot run, reported as one line on stderr with exit code 2."""


@dataclass(frozen=True)
class Globals:
    """Options every subcommand accepts."""

    config: Path | None
    state_dir: Path
    debug: bool
    state_dir_given: bool = False
    """Whether ``--state-dir`` was on the command line (else ``state_dir`` is the default)."""

    @property
    def paths(self) -> StatePaths:
        """The state dir's files."""
        return StatePaths(self.state_dir)


def globals_from(opts: dict[str, str | bool]) -> Globals:
    """Resolve ``--config``, ``--state-dir`` and ``--debug``."""
    config = opts.get("config")
    state = opts.get("state-dir")
    return Globals(
        config=Path(config).expanduser() if isinstance(config, str) else None,
        state_dir=Path(state).expanduser() if isinstance(state, str) else default_state_dir(),
        debug=bool(opts.get("debug")),
        state_dir_given=isinstance(state, str),
    )


def parse_since(text: str, now: datetime | None = None, option: str = "--since") -> datetime:
    """A duration back from now (``90s``, ``15m``, ``2h``, ``7d``; at most 100 years) or an ISO-8601
    time, as UTC (``option``: the option named in a usage error)."""
    now = now or datetime.now(UTC)
    try:
        return now - timedelta(seconds=parse_duration(text))
    except DurationOutOfRange as exc:
        raise UsageError(f"{option} {exc}") from None
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: expected a duration like 90s, 15m, 2h, 7d or an ISO-8601 time"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def iso_z(when: datetime) -> str:
    """ISO-8601 UTC with milliseconds and Z (the call log's ``ts`` format)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def control_request(
    paths: StatePaths, command: str, args: dict[str, Any] | None = None, timeout: float = 10.0
) -> Any:
    """Send one control request to the running daemon and return its result.

    A process that holds a harness token (``HARNESS_MCP_TOKEN``, as every spawned harness does)
    presents it: the daemon then allows exactly what that harness's ``mcp_allow`` permits. The
    operator's shell holds none (docs/control-socket.md)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(paths.socket))
    except OSError as exc:
        raise NoDaemon(
            f"no daemon is running for {paths.root} ({exc.strerror or exc}); start it with `harness daemon`"
        ) from None
    with sock:
        preamble: dict[str, Any] = {
            "harness_bridge": 1,
            "kind": "control",
            "command": command,
            "args": args or {},
        }
        if token := os.environ.get("HARNESS_MCP_TOKEN"):
            preamble["token"] = token
        with contextlib.suppress(OSError):  # a refusal may have closed it: its line is still there
            sock.sendall(json.dumps(preamble).encode() + b"\n")
        data = b""
        try:
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            raise CliError(f"the daemon gave no answer within {timeout:g}s") from None
        except OSError as exc:
            raise CliError(f"the connection to the daemon failed ({exc.strerror or exc})") from None
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise CliError("the daemon gave no answer")
    if not answer.get("ok"):
        raise CliError(
            str(answer.get("error") or answer.get("harness_error") or "the daemon refused the request")
        )
    return answer["result"]
