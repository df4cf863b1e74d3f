"""The live status page on the metrics listener (``/``): plain HTML that reloads itself every
second, no script and no build step. The daemon gathers the data (its status, the newest call-log
rows, the schema bytes per harness); :func:`render` only lays it out."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from html import escape
from pathlib import PurePath
from typing import Any

from harness.actors.log_stall import describe
from harness.config.approvals import unapproved_hint
from harness.printable import printable

REFRESH_S = 1
RECENT_CALLS = 20

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}
th,td{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:left}
th{background:#f4f4f4}.num{text-align:right}
.up{color:#176f2c;font-weight:600}.down{color:#b3261e;font-weight:600}
.ok{color:#176f2c}.bad{color:#b3261e}small{color:#666}
"""


def _row(cells: Iterable[tuple[Any, str]], attribute: str = "") -> str:
    """One table row from (value, css class) pairs; every value printable and escaped, None shown as
    ``-``."""
    out = []
    for value, css in cells:
        shown = escape(printable("-" if value is None or value == "" else str(value)))
        out.append(f'<td class="{css}">{shown}</td>' if css else f"<td>{shown}</td>")
    return f"<tr {attribute}>{''.join(out)}</tr>" if attribute else f"<tr>{''.join(out)}</tr>"


def _table(table_id: str, headers: Iterable[str], rows: list[str], empty: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(rows) or f'<tr><td colspan="9"><small>{escape(empty)}</small></td></tr>'
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def _upstream_rows(upstreams: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = []
    for name, u in upstreams.items():
        up = u.get("state") == "up"
        breaker = u.get("breaker")
        cells = [
            (name, ""),
            ("up" if up else f"down ({u.get('state')})", "up" if up else "down"),
            (breaker, "ok" if breaker == "closed" else "bad"),
            (u.get("pid"), "num"),
            (u.get("tools"), "num"),
            (u.get("in_flight"), "num"),
            (u.get("waiting"), "num"),
            (u.get("project"), ""),
        ]
        rows.append(_row(cells, f'data-upstream="{escape(printable(name))}"'))
    return rows


def _harness_rows(status: Mapping[str, Any], schema_bytes: Mapping[str, float]) -> list[str]:
    states: Mapping[str, str] = status.get("harnesses", {})
    sessions: Mapping[str, int] = status.get("sessions_per_harness", {})
    rows = []
    for name in sorted(set(states) | set(sessions)):
        label = name or "(unattributed)"
        size = schema_bytes.get(name)
        cells = [
            (label, ""),
            (states.get(name), ""),
            (sessions.get(name, 0), "num"),
            (None if size is None else f"{int(size):,}", "num"),
        ]
        rows.append(_row(cells, f'data-harness="{escape(printable(label))}"'))
    return rows


def _call_rows(calls: Iterable[Mapping[str, Any]]) -> list[str]:
    rows = []
    for c in calls:
        outcome = c.get("outcome")
        cells = [
            (str(c.get("ts", ""))[11:23], ""),
            (c.get("harness") or "(unattributed)", ""),
            (f"{c.get('upstream')}__{c.get('tool')}", ""),
            (outcome, "ok" if outcome == "ok" else "bad"),
            (f"{float(c.get('latency_ms') or 0):.1f}", "num"),
        ]
        rows.append(_row(cells))
    return rows


def _call_log(state: Mapping[str, Any] | None) -> str:
    """Whether the call log is being written: a stall (and why) or drops in red."""
    if not state:
        return ""
    css = "bad" if state["state"] == "stalled" or state["dropped"] else "ok"
    return f'<p class="{css}" id="call-log">call log: {escape(describe(state))}</p>'


def _unapproved(files: Iterable[str]) -> str:
    """A line per project file whose upstreams do not run until the operator approves it."""
    lines = []
    for file in files:
        hint = escape(unapproved_hint(PurePath(file)))
        lines.append(f'<p class="bad" data-unapproved="{escape(file)}">{hint}</p>')
    return "".join(lines)


def render(
    status: Mapping[str, Any],
    calls: Iterable[Mapping[str, Any]],
    schema_bytes: Mapping[str, float],
) -> bytes:
    """The page: upstreams (state, breaker, calls in flight, project folder), project files not
    approved, harnesses (state, sessions, schema bytes of the newest session's tool list), the newest
    calls (outcome, latency), newest first."""
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    newest_first = list(calls)[::-1]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<meta http-equiv='refresh' content='{REFRESH_S}'>",
        f"<title>Harness gateway</title><style>{_STYLE}</style></head><body>",
        "<h1>Harness gateway</h1>",
        f"<p>daemon pid {escape(str(status.get('pid')))}, version {escape(str(status.get('version')))}, "
        f"{escape(str(status.get('sessions', 0)))} sessions <small>updated {stamp} UTC</small></p>",
        _call_log(status.get("call_log")),
        "<h2>Upstreams</h2>",
        _table(
            "upstreams",
            ("upstream", "state", "breaker", "pid", "tools", "in flight", "waiting", "project"),
            _upstream_rows(status.get("upstreams", {})),
            "no upstreams configured",
        ),
        _unapproved(status.get("unapproved_projects", ())),
        "<h2>Harnesses</h2>",
        _table(
            "harnesses",
            ("harness", "state", "sessions", "schema bytes"),
            _harness_rows(status, schema_bytes),
            "no harnesses",
        ),
        "<h2>Recent calls</h2>",
        _table(
            "calls", ("time", "harness", "tool", "outcome", "ms"), _call_rows(newest_first), "no calls yet"
        ),
        "</body></html>",
    ]
    return "".join(parts).encode()
