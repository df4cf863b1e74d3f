"""Durations as written in configuration, CLI options and tool arguments: ``500ms``, ``30s``, ``5m``,
``1h``, ``7d``; at most :data:`MAX_DURATION_S` (100 years)."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_DURATION_DAYS = 36_500
MAX_DURATION_S = MAX_DURATION_DAYS * 86400.0
"""The longest duration accepted anywhere (100 years): longer ones cannot be turned into dates."""


class DurationOutOfRange(ValueError):
    """A well-formed duration longer than :data:`MAX_DURATION_S`."""


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (a non-negative number and a unit: ms, s, m, h or d, at most 100 years);
    ValueError otherwise (:class:`DurationOutOfRange` when only the length is wrong)."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. '500ms', '30s', '5m', '1h')")
    number, unit = match.groups()
    seconds = float(number) * _UNIT_SECONDS[unit]
    if seconds > MAX_DURATION_S:
        raise DurationOutOfRange(
            f"{text!r} is longer than the longest duration accepted, {MAX_DURATION_DAYS}d (100 years)"
        )
    return seconds
