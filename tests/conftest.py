"""Test-wide setup: the shared helpers importable as ``support`` (tests/support.py) and the unit-test
builders as ``tests_support`` (tests/unit/tests_support.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
for folder in (HERE / "unit", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
