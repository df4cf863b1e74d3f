"""Stored arguments past the cap: cut inside string values, so the stored text is still JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

ARGS_CAP_BYTES = 4096
CUT = "…[truncated]"
"""Ends every string value that was cut."""

OVERSIZED_KEY = "[truncated]"
"""The one key of what is stored when even the arguments' structure, every string cut, is over the
cap: its value is the start of the canonical JSON text, as a string."""


class CappedArgs(NamedTuple):
    """Arguments as stored: JSON text of at most the cap, and whether anything was cut."""

    text: str
    truncated: bool


def _cut(value: Any, keep: int) -> Any:
    """``value`` with each string longer than ``keep`` characters (plus the marker) cut to ``keep``
    and marked; keys are kept whole."""
    if isinstance(value, str):
        return value if len(value) <= keep + len(CUT) else value[:keep] + CUT
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(v, keep) for v in value]
    return value


def _longest(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max(map(_longest, value.values()), default=0)
    if isinstance(value, list | tuple):
        return max(map(_longest, value), default=0)
    return 0


def _size(text: str) -> int:
    return len(text.encode(errors="surrogatepass"))


def cap_json(value: Any, text: str, encode: Callable[[Any], str], limit: int = ARGS_CAP_BYTES) -> CappedArgs:
    """``text``, the JSON ``encode`` makes of ``value``, if it fits in ``limit`` UTF-8 bytes.

    Else the JSON of ``value`` with its strings cut to the longest common length that fits (each cut
    one ends with ``CUT``; short strings, numbers and keys stay whole), found by bisection. If the
    structure alone is over the cap (every string cut), ``{"[truncated]": "<start of text>"}``.
    Either way the result parses as JSON.
    """
    if len(text) * 4 <= limit or _size(text) <= limit:  # (a character is at most 4 bytes)
        return CappedArgs(text, False)
    best = encode(_cut(value, 0))
    if _size(best) > limit:
        empty = json.dumps({OVERSIZED_KEY: ""}, ensure_ascii=False)
        room = (limit - len(empty)) // 2  # escaping the text at most doubles it
        start = text.encode(errors="surrogatepass")[:room].decode(errors="ignore")
        return CappedArgs(json.dumps({OVERSIZED_KEY: start}, ensure_ascii=False), True)
    # Fits with ``low``; not with ``high``: then nothing is cut, or a string keeps ``limit`` characters.
    low, high = 0, min(_longest(value), limit)
    while high - low > 1:
        middle = (low + high) // 2
        candidate = encode(_cut(value, middle))
        if _size(candidate) <= limit:
            low, best = middle, candidate
        else:
            high = middle
    return CappedArgs(best, True)
