"""Subcommands other than ``harness mcp``: dispatch, with one-line errors (their parser: ``parser.py``)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from harness.cli import completion, export_command, parser
from harness.cli.common import CliError, Globals, UsageError, globals_from, iso_z, parse_since
from harness.cli.formatting import call_json, format_call, harness_table
from harness.config.approvals import unapproved_hint

if TYPE_CHECKING:
    from harness.reading import StoreView

Handler = Callable[[argparse.Namespace, Globals], int]


def dispatch(argv: list[str], opts: dict[str, str | bool], more: dict[str, Handler] | None = None) -> int:
    """Parse and run one subcommand; 0 ok, 1 failure, 2 usage error. ``more`` supplies the handlers
    of commands built above the CLI layer (``demo``)."""
    ns = parser.build().parse_args(argv)
    g = globals_from(opts)
    handler = {**_HANDLERS, **(more or {})}[ns.command]
    try:
        return handler(ns, g)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except UsageError as exc:
        if g.debug:
            raise
        print(f"harness {ns.command}: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if g.debug:
            raise
        print(f"harness {ns.command}: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def _cmd_completion(ns: argparse.Namespace, g: Globals) -> int:
    print(completion.script(parser.build(), ns.shell), end="")
    return 0


def _cmd_project(ns: argparse.Namespace, g: Globals) -> int:
    from harness.config.approvals import approve, project_file, revoke
    from harness.config.projects import PROJECT_FILE, read_project_file
    from harness.config.tables import read_bytes

    folder = Path(ns.dir)
    if ns.action == "revoke":
        named = (folder / PROJECT_FILE).resolve()  # it may be gone: revoking needs no file
        if revoke(g.state_dir, named):
            print(f"revoked {named}; `harness reload` stops its upstreams")
            return 0
        print(f"{named} was not approved", file=sys.stderr)
        return 1
    file = project_file(folder)
    data = read_bytes(file)  # read once: what is shown is what is approved
    upstreams = read_project_file(file, data)  # refused here, naming the key, as the daemon would
    sha = approve(g.state_dir, file, data)
    print(f"approved {file} (sha256 {sha[:12]}); it runs:")
    for upstream in upstreams:
        what = " ".join(upstream.argv) if upstream.argv else f"{upstream.url} (HTTP)"
        print(f"  {upstream.name}: {what}")
    print("`harness reload` starts them; a change to the file needs a new approval")
    return 0


def _cmd_daemon(ns: argparse.Namespace, g: Globals) -> int:
    import logging

    import anyio

    from harness.config import load_config
    from harness.gateway.daemon import Daemon
    from harness.gateway.event_loop import loop_factory

    logging.basicConfig(
        level=logging.DEBUG if g.debug else logging.INFO,
        format="harness daemon: %(message)s",
        stream=sys.stderr,
    )
    factory = loop_factory()  # a bad HARNESS_EVENT_LOOP: one line, before anything starts
    config = load_config(g.config)
    daemon = Daemon(config, g.state_dir, g.config)
    return int(anyio.run(daemon.run, backend_options={"loop_factory": factory}))


def _cmd_list(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.common import control_request

    rows: list[dict[str, Any]] = control_request(g.paths, "list")
    if ns.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no harnesses configured")
        return 0
    for line in harness_table(rows):
        print(line)
    return 0


def _cmd_calls(ns: argparse.Namespace, g: Globals) -> int:
    from harness.reading import open_store

    since = iso_z(parse_since(ns.since)) if ns.since else None
    if ns.limit is not None and ns.limit < 1:
        raise UsageError("--limit must be at least 1")
    if ns.after < 0:
        raise UsageError("--after must be a position (0 or more)")
    view = open_store(g.paths.db)
    show: Callable[[dict[str, Any]], str] = call_json if ns.json else format_call
    rows = view.calls(harness=ns.harness, since=since, limit=ns.limit, after_position=ns.after)
    if not rows and ns.harness is not None and not _known_harness(g, view, ns.harness):
        raise CliError(f"no harness named {ns.harness!r} in the configuration or the log")
    for row in rows:
        print(show(row), flush=ns.follow)
    if not ns.follow:
        return 0
    # SIGINT sets a flag rather than raising: a KeyboardInterrupt raised inside the SQLite library's
    # C code can be lost there, and the loop would never end (seen under load in CI).
    interrupted = threading.Event()
    signal.signal(signal.SIGINT, lambda _sig, _frame: interrupted.set())
    last = max((row["position"] for row in rows), default=ns.after)  # rows are shown by start time
    while not interrupted.wait(0.3):
        for row in view.calls(harness=ns.harness, since=since, after_position=last):
            print(show(row), flush=True)
            last = max(last, row["position"])
    return 130


def _known_harness(g: Globals, view: StoreView, name: str) -> bool:
    """Whether ``name`` is a harness of the configuration, or one the call log has rows of (a
    removed harness keeps its rows); a configuration that cannot be read names none."""
    from harness.config import ConfigError, load_config

    try:
        if name in load_config(g.config).harnesses:
            return True
    except ConfigError:
        pass
    return (
        view.conn.execute("SELECT 1 FROM call_log WHERE harness = ? LIMIT 1", (name,)).fetchone() is not None
    )


def _cmd_export(ns: argparse.Namespace, g: Globals) -> int:
    return export_command.run_export(ns, g)


def _cmd_runs(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.runs import print_runs

    return print_runs(g, ns.harness, ns.since, as_json=ns.json)


def _cmd_replay(ns: argparse.Namespace, g: Globals) -> int:
    from pathlib import Path

    from harness.replay import replay

    src = Path(ns.db).expanduser() if ns.db else g.paths.db
    since = parse_since(ns.since).timestamp() if ns.since else None
    until = parse_since(ns.until, option="--until").timestamp() if ns.until else None
    result = replay(src, Path(ns.to).expanduser(), since=since, until=until, harness=ns.harness)
    print(f"replayed {result.events} events into {ns.to} ({result.events_per_s:,.0f} events/s)")
    return 0


def _cmd_reload(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.common import control_request

    result = control_request(g.paths, "reload", timeout=120.0)
    if ns.json:
        print(json.dumps(result))
        return 0
    changed = ", ".join(result["upstreams_changed"]) or "none"
    started = ", ".join(result.get("harnesses_started", ())) or "none"
    stopped = ", ".join(result["harnesses_stopped"]) or "none"
    print(
        f"reloaded; upstreams restarted or changed: {changed}; harnesses started: {started}; "
        f"harnesses stopped: {stopped}"
    )
    for name, why in result.get("upstreams_not_up", {}).items():
        print(f"upstream {name} is not up: {why} (`harness logs {name}` shows its output)")
    for line in result.get("failed", ()):
        print(f"harness reload: failed: {line}", file=sys.stderr)
    return 1 if result.get("failed") else 0


def _cmd_tools(ns: argparse.Namespace, g: Globals) -> int:
    if ns.action == "search":
        return _tools_search(ns, g)
    from harness.cli.tools import print_tools

    return print_tools(g, ns.harness, as_json=ns.json)


def _tools_search(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.tools import harness_view
    from harness.printable import printable
    from harness.reading import open_store

    query = " ".join(ns.query)
    if ns.k < 1:
        raise UsageError("-k must be at least 1")
    if not query.strip():
        raise UsageError("no query: give words to search for")
    allowed: set[str] | None = None
    upstreams: set[str] | None = None
    with open_store(g.paths.db) as view:
        if ns.harness is not None:
            routes = harness_view(g, view, ns.harness).routes
            allowed, upstreams = set(routes), {route.upstream for route in routes.values()}
        hits = view.search_tools(query, k=ns.k, allowed=allowed, upstreams=upstreams)
    if ns.json:
        print(
            json.dumps(
                [
                    {
                        "name": h.name,
                        "upstream": h.upstream,
                        "tool": h.tool,
                        "description": h.description,
                        "inputSchema": h.input_schema,
                        "score": round(h.score, 4),
                    }
                    for h in hits
                ],
                ensure_ascii=False,
            )
        )
        return 0
    if not hits:
        print("no matching tools")
        return 0
    for h in hits:
        first = printable(h.description).strip().split("\n", 1)[0]
        print(f"{printable(h.name):<44} {first[:100]}")
    return 0


def _lifecycle(ns: argparse.Namespace, g: Globals, command: str, say: Callable[[dict[str, Any]], str]) -> int:
    """``restart``/``start``/``stop NAME`` over the control socket; ``say`` words the answer."""
    from harness.cli.common import control_request

    result = control_request(g.paths, command, {"name": ns.name}, timeout=60.0)
    print(json.dumps(result) if ns.json else say(result))
    return 0


def _pid(result: dict[str, Any]) -> str:
    return f" (pid {result['pid']})" if result.get("pid") else ""


def _cmd_restart(ns: argparse.Namespace, g: Globals) -> int:
    return _lifecycle(ns, g, "restart", lambda r: f"restarted {r['kind']} {r['restarted']}{_pid(r)}")


def _cmd_start(ns: argparse.Namespace, g: Globals) -> int:
    return _lifecycle(
        ns, g, "start", lambda r: f"started harness {r['started']} (pid {r['pid']}, run {r['run_id']})"
    )


def _cmd_stop(ns: argparse.Namespace, g: Globals) -> int:
    return _lifecycle(ns, g, "stop", lambda r: f"stopped harness {r['stopped']}{_pid(r)}")


def _cmd_status(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.common import control_request

    result: dict[str, Any] = control_request(g.paths, "status")
    if ns.json:
        print(json.dumps(result))
        return 0
    loop = f", event loop {result['event_loop']}" if "event_loop" in result else ""  # an older daemon: none
    print(f"daemon pid {result['pid']}, version {result['version']}{loop}, {result['sessions']} sessions")
    upstreams: dict[str, dict[str, Any]] = result["upstreams"]
    if upstreams:
        print(
            f"{'UPSTREAM':<20} {'STATE':<11} {'PID':>7} {'TOOLS':>5} {'IN-FLIGHT':>9} {'WAITING':>7}  "
            f"{'BREAKER':<9}  PROJECT"
        )
        for name, u in upstreams.items():
            rows = [(name, u), *((f"  @{h}", i) for h, i in u.get("instances", {}).items())]
            for label, r in rows:
                print(
                    f"{label:<20} {r['state']:<11} {r['pid'] or '-':>7} {r['tools']:>5} {r['in_flight']:>9} "
                    f"{r['waiting']:>7}  {r['breaker']:<9}  {r.get('project') or '-'}"
                )
    else:
        print("no upstreams configured")
    harnesses: dict[str, str] = result.get("harnesses", {})
    if harnesses:
        print("harnesses: " + ", ".join(f"{n} {s}" for n, s in harnesses.items()))
    for file in result.get("unapproved_projects", []):
        print(unapproved_hint(PurePath(file)))
    if "call_log" in result:
        from harness.actors.log_stall import describe

        print(f"call log: {describe(result['call_log'])}")
    return 0


def _cmd_describe(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.common import control_request

    result: dict[str, Any] = control_request(g.paths, "describe", {"name": ns.name})
    if ns.json:
        print(json.dumps(result))
        return 0
    sessions = result.pop("sessions", None)
    width = max(len(k) for k in result)
    for key, value in result.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        print(f"{key:<{width}}  {'-' if shown is None or shown == '' else shown}")
    if sessions is not None:
        print(f"{'sessions':<{width}}  {len(sessions)}")
        for s in sessions:
            print(f"  {s['session_id']}  {s['protocol_version'] or 'not initialized'}")
    return 0


def _cmd_logs(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.logs import read_logs

    result = read_logs(g, ns.name, ns.lines)
    if ns.json:
        print(json.dumps(result))
        return 0
    for line in result["lines"]:
        print(line)
    return 0


def _cmd_doctor(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli.doctor import print_wiring, run_doctor

    if ns.wiring:
        return print_wiring(as_json=ns.json)
    return run_doctor(g, as_json=ns.json)


def _cmd_policy(ns: argparse.Namespace, g: Globals) -> int:
    from pathlib import Path

    from harness.cli.whatif_command import run_what_if

    return run_what_if(g, Path(ns.policy), ns.since, as_json=ns.json)


def _cmd_mcp(ns: argparse.Namespace, g: Globals) -> int:
    from harness.cli import bridge

    return bridge.run(str(g.state_dir))


_HANDLERS: dict[str, Handler] = {
    "daemon": _cmd_daemon,
    "mcp": _cmd_mcp,
    "list": _cmd_list,
    "calls": _cmd_calls,
    "runs": _cmd_runs,
    "export": _cmd_export,
    "replay": _cmd_replay,
    "tools": _cmd_tools,
    "reload": _cmd_reload,
    "restart": _cmd_restart,
    "start": _cmd_start,
    "stop": _cmd_stop,
    "status": _cmd_status,
    "describe": _cmd_describe,
    "logs": _cmd_logs,
    "doctor": _cmd_doctor,
    "policy": _cmd_policy,
    "project": _cmd_project,
    "completion": _cmd_completion,
}
