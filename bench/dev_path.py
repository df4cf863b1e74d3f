"""Puts the repository's root on ``sys.path``, so a benchmark can import ``devtools`` (the helpers
tests and bench share, left out of the wheel). Imported for that effect only."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)
