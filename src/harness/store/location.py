"""Where the store lives by default: the state dir's ``harness.db``."""

from __future__ import annotations

import os
from pathlib import Path

STORE_FILE = "harness.db"


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/harness``, else ``~/.local/state/harness``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "harness"
