"""Subcommands other than ``harness mcp``: parsing and dispatch, with one-line errors."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from harness.cli import completion, export_command
from harness.cli.common import CliError, Globals, UsageError, globals_from, iso_z, parse_since
from harness.cli.formatting import call_json, format_call, harness_table
from harness.config.approvals import unapproved_hint

if TYPE_CHECKING:
    from harness.reading import StoreView

_GLOBAL_HELP = "--config FILE, --state-dir DIR and --debug are accepted anywhere on the command line."


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="harness",
        description="Harness gateway: each MCP server runs once; each agent gets its own endpoint.",
        epilog=_GLOBAL_HELP,
    )
    _global_options(ap)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    sub.add_parser("daemon", help="run the daemon in the foreground", epilog=_GLOBAL_HELP)
    sub.add_parser("mcp", help="the stdio bridge an agent CLI launches", epilog=_GLOBAL_HELP)
    demo = sub.add_parser("demo", help="run a daemon on a built-in demo configuration", epilog=_GLOBAL_HELP)
    demo.add_argument("--calls", type=int, default=5, help="calls each demo agent makes (default 5)")
    listing = sub.add_parser("list", help="the harnesses of the running daemon", epilog=_GLOBAL_HELP)
    listing.add_argument("--json", action="store_true", help="a JSON array")
    _control_parsers(sub)
    calls = sub.add_parser("calls", help="the call log, read from the store", epilog=_GLOBAL_HELP)
    calls.add_argument("--harness", help="only this harness's calls")
    calls.add_argument("--since", help="a duration (90s, 15m, 2h, 7d) or an ISO-8601 time")
    calls.add_argument("--limit", type=int, default=None, help="the N most recent, printed oldest first")
    calls.add_argument(
        "--after", type=int, default=0, metavar="POSITION", help="only calls logged after this position"
    )
    calls.add_argument(
        "--json", action="store_true", help="one JSON object per line (same keys on every line)"
    )
    calls.add_argument("--follow", action="store_true", help="keep printing calls as they land")
    export_command.add_parser(sub, _GLOBAL_HELP)
    runs = sub.add_parser("runs", help="the runs (one per spawn), read from the store", epilog=_GLOBAL_HELP)
    runs.add_argument("--harness", help="only this harness's runs")
    runs.add_argument("--since", help="runs started since: a duration (90s, 15m, 2h, 7d) or an ISO-8601 time")
    runs.add_argument("--json", action="store_true", help="one JSON object per line")
    replay = sub.add_parser(
        "replay", help="copy events into a new store and fold every projection there", epilog=_GLOBAL_HELP
    )
    replay.add_argument("--db", help="source store (default: the state dir's harness.db)")
    replay.add_argument("--to", required=True, help="the new store file (must not exist)")
    replay.add_argument("--since", help="only events at or after this time (duration or ISO-8601)")
    replay.add_argument("--until", help="only events before this time (duration or ISO-8601)")
    replay.add_argument("--harness", help="only this harness's events (plus gateway-wide ones)")
    tools = sub.add_parser(
        "tools",
        help="a harness's effective tools with tiers and schema bytes per mode; `tools search QUERY`",
        epilog=_GLOBAL_HELP,
    )
    tools.add_argument("--harness", help="the tools this harness's policy allows (default: every known tool)")
    tools.add_argument("--json", action="store_true", help="one JSON object")
    tools_sub = tools.add_subparsers(dest="action", metavar="ACTION")
    search = tools_sub.add_parser(
        "search", help="the search `search_tools` runs (works with the daemon stopped)", epilog=_GLOBAL_HELP
    )
    search.add_argument("query", nargs="*", help="the words to look for (read as words, never as syntax)")
    search.add_argument("--harness", help="only the tools this harness's policy allows")
    search.add_argument("-k", type=int, default=10, help="how many results (default 10)")
    search.add_argument("--json", action="store_true", help="a JSON array, best first")
    _policy_parsers(sub)
    _project_parsers(sub)
    completion.add_parser(sub, _GLOBAL_HELP)
    return ap


def _global_options(ap: argparse.ArgumentParser) -> None:
    """``--version``, and the global options for ``--help`` (``harness.main`` takes them off the
    command line before parsing, wherever they are)."""
    from harness import __version__

    ap.add_argument("--version", action="version", version=f"harness {__version__}")
    ap.add_argument(
        "--config",
        metavar="FILE",
        help="the configuration (default ~/.config/harness/harness.toml, or under $XDG_CONFIG_HOME)",
    )
    ap.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the state dir (default ~/.local/state/harness, or under $XDG_STATE_HOME)",
    )
    ap.add_argument("--debug", action="store_true", help="debug logging; errors with their traceback")


def _project_parsers(sub: Any) -> None:
    """``harness project allow|revoke [DIR]`` (config/approvals.py: why project files need it)."""
    project = sub.add_parser(
        "project",
        help="approve a project file (harness.toml in a workdir) for the daemon to run",
        epilog=_GLOBAL_HELP,
    )
    actions = project.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for action, text in (
        ("allow", "approve DIR's harness.toml as it is now: the daemon runs its upstreams (after a reload)"),
        ("revoke", "withdraw the approval: its upstreams stop at the next reload"),
    ):
        command = actions.add_parser(action, help=text, epilog=_GLOBAL_HELP)
        command.add_argument("dir", nargs="?", default=".", help="the project folder (default: here)")


def _policy_parsers(sub: Any) -> None:
    """``harness policy what-if`` (src/harness/cli/proposal.py says what the file may hold)."""
    policy = sub.add_parser("policy", help="try a proposed policy against the call log", epilog=_GLOBAL_HELP)
    actions = policy.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    what_if = actions.add_parser(
        "what-if",
        help="replay the logged calls under proposed [mcp_policy.*] tables (works with the daemon stopped)",
        epilog=_GLOBAL_HELP,
    )
    what_if.add_argument("--policy", required=True, metavar="FILE", help="the proposed tables (TOML)")
    what_if.add_argument(
        "--since", default="30d", help="a duration (90s, 15m, 2h, 7d) or an ISO-8601 time (default 30d)"
    )
    what_if.add_argument("--json", action="store_true", help="one JSON object")


def _control_parsers(sub: Any) -> None:
    """The control-plane commands beside ``list`` (docs/control-socket.md: who may run which)."""
    status = sub.add_parser(
        "status", help="the running daemon: upstreams (state, breaker, calls in flight)", epilog=_GLOBAL_HELP
    )
    status.add_argument("--json", action="store_true", help="one JSON object")
    describe = sub.add_parser(
        "describe", help="a harness (its table, state, sessions) or an upstream", epilog=_GLOBAL_HELP
    )
    describe.add_argument("name", help="a harness name, else an upstream key")
    describe.add_argument("--json", action="store_true", help="one JSON object")
    logs = sub.add_parser(
        "logs",
        help="the end of a harness's (or an upstream's) log; read from its file when no daemon runs",
        epilog=_GLOBAL_HELP,
    )
    logs.add_argument("name", help="a harness name, else an upstream key")
    logs.add_argument(
        "-n", dest="lines", type=_log_lines, default=50, metavar="N", help="the last N lines (default 50)"
    )
    logs.add_argument("--json", action="store_true", help="one JSON object")
    for name, text in (
        ("start", "start a stopped harness with a fresh token"),
        ("stop", "stop a running harness (it stays stopped until start, restart or a daemon start)"),
        ("restart", "restart a harness, or an upstream (gracefully; clears its failed state)"),
    ):
        command = sub.add_parser(name, help=text, epilog=_GLOBAL_HELP)
        command.add_argument(
            "name", help="a harness name" + (", else an upstream key" if name == "restart" else "")
        )
        command.add_argument("--json", action="store_true", help="one JSON object")
    reload = sub.add_parser(
        "reload", help="make the running daemon re-read its configuration", epilog=_GLOBAL_HELP
    )
    reload.add_argument("--json", action="store_true", help="one JSON object")
    doctor = sub.add_parser(
        "doctor",
        help="check the configuration, the daemon (when running), shared upstreams, wiring and the store",
        epilog=_GLOBAL_HELP,
    )
    doctor.add_argument("--json", action="store_true", help="one JSON object")
    doctor.add_argument(
        "--wiring",
        action="store_true",
        help="print every bus subscription of the daemon and the thread it runs on, then exit",
    )


def _log_lines(text: str) -> int:
    from harness.gateway.control_plane import MAX_LOG_LINES

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of lines, not {text!r}") from None
    if not 1 <= value <= MAX_LOG_LINES:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LOG_LINES}")
    return value


Handler = Callable[[argparse.Namespace, Globals], int]


def dispatch(argv: list[str], opts: dict[str, str | bool], more: dict[str, Handler] | None = None) -> int:
    """Parse and run one subcommand; 0 ok, 1 failure, 2 usage error. ``more`` supplies the handlers
    of commands built above the CLI layer (``demo``)."""
    ns = _parser().parse_args(argv)
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
    print(completion.script(_parser(), ns.shell), end="")
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
