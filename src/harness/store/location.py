"""Where the store lives by default: the state dir's ``harness.db``."""

from __future__ import annotations

import os
from pathlib import Path

STORE_FILE = "harness.db"


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/harness``, else ``~/.local/state/harness``; a relative ``XDG_STATE_HOME``
    is ignored, as the XDG spec says."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "harness"
