"""No class in ``src/harness`` holds more than 300 lines (issue 24): a class that grows past it is
split by concern, as ``StoreView`` was into ``reading/summaries.py`` and ``reading/frames.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import harness

SRC = Path(harness.__file__).parent
MOST_LINES = 300
BEING_SPLIT: frozenset[str] = frozenset()
"""Classes still over the limit while issue 24 splits them on their own branches: remove a name
when its class is split (the second test fails until then)."""


def _class_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                where = f"{path.relative_to(SRC.parent)}:{node.name}"
                lengths[where] = node.end_lineno - node.lineno + 1
    return lengths


def test_no_class_in_src_holds_more_than_300_lines() -> None:
    long = {
        where: n
        for where, n in _class_lengths().items()
        if n > MOST_LINES and where.rpartition(":")[2] not in BEING_SPLIT
    }
    assert not long, f"classes over {MOST_LINES} lines (split them by concern): {long}"


def test_every_class_listed_as_being_split_is_still_over_the_limit() -> None:
    still = {where.rpartition(":")[2] for where, n in _class_lengths().items() if n > MOST_LINES}
    assert still >= BEING_SPLIT, f"split already, drop from BEING_SPLIT: {sorted(BEING_SPLIT - still)}"
