"""Durations as written in configuration: ``500ms``, ``30s``, ``5m``, ``1h``, ``7d``."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (a non-negative number and a unit: ms, s, m, h or d); ValueError otherwise."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. '500ms', '30s', '5m', '1h')")
    number, unit = match.groups()
    return float(number) * _UNIT_SECONDS[unit]
