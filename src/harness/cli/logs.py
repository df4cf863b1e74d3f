"""``harness logs NAME``: the daemon's answer, or, with no daemon running, the log files themselves.

The files are the ones the daemon writes and reads for ``logs`` (``harnesses/NAME.log``,
``upstreams/KEY.log`` in the state dir), tailed the same way. Only the operator reads them directly:
a process holding a harness token is inside a harness's tree, and there only the daemon may say
what it can read (docs/control-socket.md)."""

from __future__ import annotations

import os
import sys
from typing import Any

from harness.cli.common import CliError, Globals, NoDaemon, control_request
from harness.config import load_config


def read_logs(g: Globals, name: str, lines: int) -> dict[str, Any]:
    """The last ``lines`` lines of the harness's or upstream's log, as ``logs`` answers them."""
    try:
        answer: dict[str, Any] = control_request(g.paths, "logs", {"name": name, "lines": lines})
    except NoDaemon as exc:
        if os.environ.get("HARNESS_MCP_TOKEN"):
            raise CliError(f"{exc}; inside a harness only the daemon answers `logs`") from None
        answer = _from_files(g, name, lines)
        print(f"harness logs: no daemon is running; read {answer['path']}", file=sys.stderr)
    return answer


def _from_files(g: Globals, name: str, lines: int) -> dict[str, Any]:
    from harness.gateway.evidence.known_secrets import KnownSecrets
    from harness.gateway.processes import tail_lines

    config = load_config(g.config)
    if name in config.harnesses:
        kind, path = "harness", g.paths.harness_logs / f"{name}.log"
    elif name in config.upstreams:
        kind, path = "upstream", g.paths.upstream_logs / f"{name}.log"
    else:
        raise CliError(f"no harness or upstream named {name!r} in the configuration")
    # The secrets the daemon holds for upstreams are redacted as in the daemon's own answers.
    shown = KnownSecrets.of(config).scrub(tail_lines(path, lines))
    return {"name": name, "kind": kind, "path": str(path), "lines": shown}
