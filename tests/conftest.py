"""Test-wide setup: the shared helpers importable as ``support`` (tests/support.py) and the unit-test
builders as ``tests_support`` (tests/unit/tests_support.py); and the lanes, which follow folders.

``tests/unit`` is the fast lane (``pytest -m "not slow" -n 2``, or ``pytest tests/unit``): no test
there is marked ``slow``. Every test in ``acceptance/``, ``hostile/`` and ``durability/`` (real
daemons, real upstreams, kill -9) is marked here, by its folder, ``slow`` and with its folder's
name (``-m hostile`` runs the hostile tests, wherever a file says otherwise).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
for folder in (HERE / "unit", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

SLOW_FOLDERS = frozenset({"acceptance", "hostile", "durability"})
"""The folders of the slow lane: end-to-end tests with real processes."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a slow folder ``slow`` and with its folder's name."""
    for item in items:
        folder = item.path.relative_to(HERE).parts[0]
        if folder in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
            item.add_marker(getattr(pytest.mark, folder))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The conformance suites' results table (tests/acceptance/test_conformance.py), from what each
    run recorded (``record_property``, which reaches this process under xdist too)."""
    rows = sorted(
        (
            dict(value)
            for reports in terminalreporter.stats.values()
            for report in reports
            if getattr(report, "when", None) == "call"
            for name, value in getattr(report, "user_properties", ())
            if name == "conformance"
        ),
        key=lambda row: (row["suite"], row["transport"]),
    )
    if not rows:
        return
    terminalreporter.write_sep("=", "MCP conformance through the gateway (scenarios, checks: passed/run)")
    terminalreporter.write_line(f"{'suite':<6}{'upstream':<10}{'scenarios':<11}checks")
    for row in rows:
        terminalreporter.write_line(
            f"{row['suite']:<6}{row['transport']:<10}{row['scenarios']:<11}{row['checks']}"
        )
