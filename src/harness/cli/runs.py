"""``harness runs``: one line per run (a spawn) read from the store."""

from __future__ import annotations

import json
from dataclasses import asdict

from harness.cli.common import Globals, iso_z, parse_since
from harness.cli.formatting import fit
from harness.reading import Run, open_store


def print_runs(g: Globals, harness: str | None, since: str | None, *, as_json: bool) -> int:
    """Print the runs, oldest start first: a JSON object per line, or a table."""
    bound = iso_z(parse_since(since)) if since else None
    with open_store(g.paths.db) as view:
        runs = view.runs(harness=harness, since=bound)
    if as_json:
        for run in runs:
            print(json.dumps(asdict(run), ensure_ascii=False))
        return 0
    if not runs:
        print("no runs recorded")
        return 0
    print(
        f"{'STARTED':<24}  {'HARNESS':<16} {'ADAPTER':<11} {'MODEL':<16} {'EXIT':>5} "
        f"{'CALLS':>6} {'FAILED':>6} {'DENIED':>6}  RUN"
    )
    for run in runs:
        print(_line(run))
    return 0


def _line(run: Run) -> str:
    exit_code = "-" if run.exit_code is None else str(run.exit_code)
    if run.ended is None:
        exit_code = "run"
    return (
        f"{run.started or '-':<24}  {fit(run.harness, 16):<16} {fit(run.adapter or '-', 11):<11} "
        f"{fit(run.model or '-', 16):<16} {exit_code:>5} {run.calls:>6} {run.failures:>6} "
        f"{run.denials:>6}  {run.run_id}"
    )
