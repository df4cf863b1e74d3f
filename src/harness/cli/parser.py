"""The ``harness`` command line's parser: every subcommand but ``mcp``'s own (which ``harness.main``
dispatches before this is imported), its options and their help."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import completion, export_command

GLOBAL_HELP = "--config FILE, --state-dir DIR and --debug are accepted anywhere on the command line."


def build() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    ap = argparse.ArgumentParser(
        prog="harness",
        description="Harness gateway: each MCP server runs once; each agent gets its own endpoint.",
        epilog=GLOBAL_HELP,
    )
    _global_options(ap)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    sub.add_parser("daemon", help="run the daemon in the foreground", epilog=GLOBAL_HELP)
    sub.add_parser("mcp", help="the stdio bridge an agent CLI launches", epilog=GLOBAL_HELP)
    demo = sub.add_parser("demo", help="run a daemon on a built-in demo configuration", epilog=GLOBAL_HELP)
    demo.add_argument("--calls", type=int, default=5, help="calls each demo agent makes (default 5)")
    listing = sub.add_parser("list", help="the harnesses of the running daemon", epilog=GLOBAL_HELP)
    listing.add_argument("--json", action="store_true", help="a JSON array")
    _control_parsers(sub)
    calls = sub.add_parser("calls", help="the call log, read from the store", epilog=GLOBAL_HELP)
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
    export_command.add_parser(sub, GLOBAL_HELP)
    runs = sub.add_parser("runs", help="the runs (one per spawn), read from the store", epilog=GLOBAL_HELP)
    runs.add_argument("--harness", help="only this harness's runs")
    runs.add_argument("--since", help="runs started since: a duration (90s, 15m, 2h, 7d) or an ISO-8601 time")
    runs.add_argument("--json", action="store_true", help="one JSON object per line")
    replay = sub.add_parser(
        "replay", help="copy events into a new store and fold every projection there", epilog=GLOBAL_HELP
    )
    replay.add_argument("--db", help="source store (default: the state dir's harness.db)")
    replay.add_argument("--to", required=True, help="the new store file (must not exist)")
    replay.add_argument("--since", help="only events at or after this time (duration or ISO-8601)")
    replay.add_argument("--until", help="only events before this time (duration or ISO-8601)")
    replay.add_argument("--harness", help="only this harness's events (plus gateway-wide ones)")
    tools = sub.add_parser(
        "tools",
        help="a harness's effective tools with tiers and schema bytes per mode; `tools search QUERY`",
        epilog=GLOBAL_HELP,
    )
    tools.add_argument("--harness", help="the tools this harness's policy allows (default: every known tool)")
    tools.add_argument("--json", action="store_true", help="one JSON object")
    tools_sub = tools.add_subparsers(dest="action", metavar="ACTION")
    search = tools_sub.add_parser(
        "search", help="the search `search_tools` runs (works with the daemon stopped)", epilog=GLOBAL_HELP
    )
    search.add_argument("query", nargs="*", help="the words to look for (read as words, never as syntax)")
    search.add_argument("--harness", help="only the tools this harness's policy allows")
    search.add_argument("-k", type=int, default=10, help="how many results (default 10)")
    search.add_argument("--json", action="store_true", help="a JSON array, best first")
    _policy_parsers(sub)
    _project_parsers(sub)
    completion.add_parser(sub, GLOBAL_HELP)
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
        epilog=GLOBAL_HELP,
    )
    actions = project.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for action, text in (
        ("allow", "approve DIR's harness.toml as it is now: the daemon runs its upstreams (after a reload)"),
        ("revoke", "withdraw the approval: its upstreams stop at the next reload"),
    ):
        command = actions.add_parser(action, help=text, epilog=GLOBAL_HELP)
        command.add_argument("dir", nargs="?", default=".", help="the project folder (default: here)")


def _policy_parsers(sub: Any) -> None:
    """``harness policy what-if`` (src/harness/cli/proposal.py says what the file may hold)."""
    policy = sub.add_parser("policy", help="try a proposed policy against the call log", epilog=GLOBAL_HELP)
    actions = policy.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    what_if = actions.add_parser(
        "what-if",
        help="replay the logged calls under proposed [mcp_policy.*] tables (works with the daemon stopped)",
        epilog=GLOBAL_HELP,
    )
    what_if.add_argument("--policy", required=True, metavar="FILE", help="the proposed tables (TOML)")
    what_if.add_argument(
        "--since", default="30d", help="a duration (90s, 15m, 2h, 7d) or an ISO-8601 time (default 30d)"
    )
    what_if.add_argument("--json", action="store_true", help="one JSON object")


def _control_parsers(sub: Any) -> None:
    """The control-plane commands beside ``list`` (docs/control-socket.md: who may run which)."""
    status = sub.add_parser(
        "status", help="the running daemon: upstreams (state, breaker, calls in flight)", epilog=GLOBAL_HELP
    )
    status.add_argument("--json", action="store_true", help="one JSON object")
    describe = sub.add_parser(
        "describe", help="a harness (its table, state, sessions) or an upstream", epilog=GLOBAL_HELP
    )
    describe.add_argument("name", help="a harness name, else an upstream key")
    describe.add_argument("--json", action="store_true", help="one JSON object")
    logs = sub.add_parser(
        "logs",
        help="the end of a harness's (or an upstream's) log; read from its file when no daemon runs",
        epilog=GLOBAL_HELP,
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
        command = sub.add_parser(name, help=text, epilog=GLOBAL_HELP)
        command.add_argument(
            "name", help="a harness name" + (", else an upstream key" if name == "restart" else "")
        )
        command.add_argument("--json", action="store_true", help="one JSON object")
    reload = sub.add_parser(
        "reload", help="make the running daemon re-read its configuration", epilog=GLOBAL_HELP
    )
    reload.add_argument("--json", action="store_true", help="one JSON object")
    doctor = sub.add_parser(
        "doctor",
        help="check the configuration, the daemon (when running), shared upstreams, wiring and the store",
        epilog=GLOBAL_HELP,
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
