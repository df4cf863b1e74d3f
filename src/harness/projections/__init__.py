"""Projections: folds of the event log into query tables, each with a version and a checkpoint."""

from harness.projections.base import (
    Projection,
    ProjectionVersionError,
    compact_folded,
    fold,
    fold_appended,
    install,
)
from harness.projections.call_log import CallLogProjection, iso_ms
from harness.projections.runs import RunsProjection
from harness.projections.tool_index import ToolIndexProjection
from harness.projections.top_k import TopKProjection
from harness.projections.upstreams import UpstreamsProjection


def all_projections() -> tuple[Projection, ...]:
    """Every projection the gateway keeps, in fold order."""
    projections: tuple[Projection, ...] = (
        CallLogProjection(),
        TopKProjection(),
        RunsProjection(),
        ToolIndexProjection(),
        UpstreamsProjection(),
    )
    return projections


__all__ = [
    "CallLogProjection",
    "Projection",
    "ProjectionVersionError",
    "RunsProjection",
    "ToolIndexProjection",
    "TopKProjection",
    "UpstreamsProjection",
    "all_projections",
    "compact_folded",
    "fold",
    "fold_appended",
    "install",
    "iso_ms",
]
