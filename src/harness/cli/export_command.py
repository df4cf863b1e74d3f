"""``harness export``: calls and per-run trajectories into Hive-style partitions, incrementally."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from harness.cli.common import Globals, iso_z, parse_since


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], epilog: str) -> None:
    """The ``export`` subcommand's options."""
    export = sub.add_parser(
        "export",
        help="calls and per-run trajectories as Hive-style partitions (works with the daemon stopped)",
        epilog=epilog,
    )
    export.add_argument("--format", choices=("parquet", "jsonl"), required=True)
    export.add_argument("--out", required=True, metavar="DIR", help="the folder (incremental)")
    export.add_argument("--since", help="calls and runs started at or after: a duration or an ISO-8601 time")
    export.add_argument("--until", help="calls and runs started before: a duration or an ISO-8601 time")
    export.add_argument("--harness", help="only this harness's calls and runs")
    export.add_argument("--run", metavar="ID", help="only this run's calls and trajectory")


def run_export(ns: argparse.Namespace, g: Globals) -> int:
    """Export (on a terminal, with the rows written so far on stderr); print one line saying what
    was written."""
    from harness.reading import open_store
    from harness.reading.export import export
    from harness.replay import print_progress

    since = iso_z(parse_since(ns.since)) if ns.since else None
    until = iso_z(parse_since(ns.until)) if ns.until else None
    out = Path(ns.out).expanduser()
    shown = sys.stderr.isatty()
    report = functools.partial(print_progress, unit="rows") if shown else None
    with open_store(g.paths.db) as view:
        result = export(
            view, out, ns.format, since=since, until=until, harness=ns.harness, run_id=ns.run, report=report
        )
    if shown:
        print(file=sys.stderr)
    running = f"; {result.running} runs still running (exported once ended)" if result.running else ""
    files = len(result.files)
    what = f"{result.calls} calls and {result.runs} run trajectories"
    print(f"exported {what} to {out} ({files} files){running}")
    return 0
