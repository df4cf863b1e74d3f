"""How call-log rows are shown: a line for people, a JSON line for scripts."""

from __future__ import annotations

import json
from typing import Any

from harness.naming import exposed_name


def format_call(row: dict[str, Any]) -> str:
    """One call-log row as a line for people."""
    who = row["harness"] or "(unattributed)"
    reason = f" ({row['error_reason']})" if row.get("error_reason") and row["outcome"] != "ok" else ""
    upstream, tool = row["upstream"], row["tool"]
    tool = tool if upstream == "harness" else exposed_name(upstream, tool)
    return (
        f"{row['ts']}  {who:<16} {tool:<34} {row['outcome'] + reason:<24} "
        f"{row['latency_ms']:>8.2f} ms  {row['response_bytes']:>7} B"
    )


def call_json(row: dict[str, Any]) -> str:
    """One call-log row as the JSON line of ``harness calls --json``."""
    out = {k: v for k, v in row.items() if k != "position" and not (k == "args" and v is None)}
    return json.dumps(out, ensure_ascii=False)
