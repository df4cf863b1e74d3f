"""Projections: folds of the event log into query tables, each with a version and a checkpoint."""

from harness.projections.base import Projection, ProjectionVersionError, fold, install
from harness.projections.call_log import CallLogProjection, iso_ms


def all_projections() -> tuple[Projection, ...]:
    """Every projection the gateway keeps, in fold order."""
    projections: tuple[Projection, ...] = (CallLogProjection(),)
    return projections


__all__ = [
    "CallLogProjection",
    "Projection",
    "ProjectionVersionError",
    "all_projections",
    "fold",
    "install",
    "iso_ms",
]
