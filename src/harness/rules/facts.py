"""The shape of a timed fact the rules evolve on: something that happened at a monotonic time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AtTime:
    """A fact that happened at monotonic time ``at`` (subclasses name what happened)."""

    at: float
