"""How rows are shown to people (call-log lines, the harness table) and call-log JSON lines to scripts."""

from __future__ import annotations

import json
from typing import Any

from harness.naming import called_name


def format_call(row: dict[str, Any]) -> str:
    """One call-log row as a line for people."""
    who = fit(row["harness"] or "(unattributed)", WHO_WIDTH)
    reason = f" ({row['error_reason']})" if row.get("error_reason") and row["outcome"] != "ok" else ""
    upstream, tool = row["upstream"], row["tool"]
    tool = fit(called_name(upstream, tool), TOOL_WIDTH)
    return (
        f"{row['ts']}  {who:<{WHO_WIDTH}} {tool:<{TOOL_WIDTH}} {fit(row['outcome'] + reason, 32):<32} "
        f"{row['latency_ms']:>9.2f} ms  {row['response_bytes']:>8} B"
    )


WHO_WIDTH = 16
TOOL_WIDTH = 50
"""Exposed tool names are at most 50 characters (the shortening rule), so every name fits."""


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters with an ellipsis, so the columns stay aligned."""
    return text if len(text) <= width else text[: width - 1] + "…"


def call_json(row: dict[str, Any]) -> str:
    """One call-log row as the JSON line of ``harness calls --json``: every column, ``position``
    (the cursor for ``--after``) among them, so every line has the same keys."""
    return json.dumps(row, ensure_ascii=False)


def harness_table(rows: list[dict[str, Any]]) -> list[str]:
    """``harness list`` for people: a header and one line per harness, each column as wide as its
    widest cell, so every state (``restarting`` the longest) keeps the columns aligned."""
    table = [
        ("NAME", "STATE", "PID", "POLICY", "SESSIONS", "RUN", "PROJECT"),
        *(
            (
                r["name"],
                r["state"],
                str(r["pid"] or "-"),
                r["policy"] or "-",
                str(r["sessions"]),
                r["run_id"] or "-",
                str(r.get("project") or "-"),
            )
            for r in rows
        ),
    ]
    widths = [max(map(len, column)) for column in zip(*table, strict=True)]
    right = (False, False, True, False, True, False, False)
    return [
        "  ".join(
            cell.rjust(width) if numeric else cell.ljust(width)
            for cell, width, numeric in zip(line, widths, right, strict=True)
        ).rstrip()
        for line in table
    ]
