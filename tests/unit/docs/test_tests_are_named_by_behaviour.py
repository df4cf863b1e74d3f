"""Tests are named by the behaviour they check, never by a review finding's number (``test_m2_…``)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parents[2]
FINDING_NUMBER = re.compile(r"test_[A-Za-z]{1,2}\d+_")


def test_no_test_file_or_function_is_named_by_a_finding_number():
    named: list[str] = []
    for path in TESTS.rglob("test_*.py"):
        if "node_modules" in path.parts:
            continue
        functions = re.findall(r"def (test_\w+)", path.read_text())
        named += [
            f"{path.relative_to(TESTS)}: {name}"
            for name in [path.name, *functions]
            if FINDING_NUMBER.match(name)
        ]
    assert named == []
