"""Text from an upstream made safe for an operator's screen (a terminal or the status page)."""

from __future__ import annotations

import re

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 control characters but ``\\t`` and ``\\n`` (escape sequences start with one), and the
bidi controls that reorder what is shown (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069)."""


def printable(text: str) -> str:
    """``text`` without control characters (tab and newline kept) and bidi controls: an escape
    sequence shows as its harmless rest (``[2J``), ``rtl\\u202eelif_daer`` as ``rtlelif_daer``."""
    return _UNPRINTABLE.sub("", text)
