"""What the reading API's queries filter by: a time bound in any form a notebook holds, a failed
call, and the selection of runs."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TypedDict

from harness.projections.call_log import iso_ms
from harness.vocabulary import FAILED_OUTCOMES, outcome_in

TimeBound = str | float | datetime | None
"""A time filter: ISO-8601 text (as in ``call_log.ts``), epoch seconds, or a datetime."""

FAILED_SQL = outcome_in(FAILED_OUTCOMES)
"""The SQL condition on ``outcome`` true for a failed call."""


class RunFilters(TypedDict, total=False):
    """The keywords ``StoreView.runs`` takes, which ``trajectories`` and the run frames pass on."""

    harness: str | None
    since: TimeBound
    """Bounds the run's start."""
    run_ids: Collection[str] | None


def iso_bound(value: TimeBound) -> str | None:
    """A time bound as the ISO text ``call_log.ts`` and ``runs.started`` compare with."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return iso_ms(value.timestamp())
    return iso_ms(float(value))


def epoch_bound(value: TimeBound) -> float | None:
    """A time bound as the epoch seconds the event log's ``ts`` holds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return float(value)
