"""The fast lane is tests/unit and the slow lane everything else, so a test's path says its lane."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).parents[2]
SLOW_MARK = re.compile(r"(?:mark\.slow\b|pytestmark\s*=.*\bslow\b)")


def test_no_test_in_tests_unit_is_marked_slow():
    marked = [
        str(p.relative_to(TESTS)) for p in (TESTS / "unit").rglob("*.py") if SLOW_MARK.search(p.read_text())
    ]
    assert marked == [], "a slow test belongs in tests/acceptance (or hostile, durability), not in tests/unit"


class _Item:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.markers: list[str] = []

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.name)


def test_every_test_outside_tests_unit_is_marked_slow_and_with_its_folders_name():
    spec = importlib.util.spec_from_file_location("tests_conftest", TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    names = ("unit/gateway/test_a.py", "acceptance/test_b.py", "hostile/test_c.py", "durability/test_d.py")
    items = [_Item(TESTS / name) for name in names]
    conftest.pytest_collection_modifyitems(items)
    assert [item.markers for item in items] == [
        [],
        ["slow", "acceptance"],
        ["slow", "hostile"],
        ["slow", "durability"],
    ]
