"""Tests are named by the behaviour they check, never by a review finding's number (``test_m2_…``)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parents[2]
FINDING_NUMBER = re.compile(r"\btest_[A-Za-z]{1,2}\d+_")


def test_no_test_file_or_function_is_named_by_a_finding_number():
    named = [
        f"{path.relative_to(TESTS)}{'' if match is None else ': ' + match.group(0)}"
        for path in TESTS.rglob("test_*.py")
        if "node_modules" not in path.parts
        for match in [None, *re.finditer(r"def (test_\w+)", path.read_text())]
        if FINDING_NUMBER.match(path.name if match is None else match.group(1))
    ]
    assert named == []
