"""The refusal table: docs/call-log.md's error table says what the code answers."""

from __future__ import annotations

import re
from pathlib import Path

from harness.rules.refusals import REFUSALS

CALL_LOG_DOC = Path(__file__).parents[3] / "docs" / "call-log.md"


def test_the_call_log_docs_error_table_lists_every_refusal_reason_with_its_code_and_outcome() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (-\d+) \| (\w+) \|", CALL_LOG_DOC.read_text(), re.MULTILINE)
    documented = {reason: (int(code), outcome) for reason, code, outcome in rows}
    coded = {r.reason: (r.code, r.outcome) for r in REFUSALS.values()}
    assert documented == coded


def test_every_refusal_says_what_happened_and_what_to_do_next() -> None:
    fields = {"name": "up__tool", "state": "stopped", "detail": "what went wrong"}
    for cause, refusal in REFUSALS.items():
        text = refusal.text(**fields)
        assert text.startswith(f"{refusal.reason}: "), cause
        assert refusal.next_step and text.endswith(refusal.next_step), cause
