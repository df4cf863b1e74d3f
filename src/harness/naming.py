"""Names agents see: ``<upstream>__<tool>``, kept within what agent CLIs and model APIs accept."""

from __future__ import annotations

import hashlib
import re

MAX_EXPOSED_NAME = 50
"""64 (Anthropic/OpenAI tool-name limit) minus Claude Code's ``mcp__harness__`` prefix."""

_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,50}$")
_INVALID_CHAR = re.compile(r"[^A-Za-z0-9_-]")


def exposed_name(upstream: str, tool: str) -> str:
    """``<upstream>__<tool>``, or, when that is invalid or too long, a shortened form.

    Rule: invalid characters become ``_``, the result is cut to 41 characters and ``_`` plus the
    first 8 hex digits of sha256("<upstream>\\0<tool>") are appended. Deterministic, ≤ 50 characters,
    and distinct for distinct real names (up to the 32-bit hash).
    """
    plain = f"{upstream}__{tool}"
    if _VALID_NAME.match(plain):
        return plain
    digest = hashlib.sha256(f"{upstream}\0{tool}".encode()).hexdigest()[:8]
    return f"{_INVALID_CHAR.sub('_', plain)[:41]}_{digest}"
