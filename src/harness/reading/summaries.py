"""What the reading API's summaries return: sessions, tool usage, searches."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionSummary:
    """One downstream session as its calls show it."""

    session_id: str
    harness: str | None
    run_id: str | None
    first_ts: str
    last_ts: str
    calls: int
    failures: int
    tools: int
    """Distinct (upstream, tool) pairs called."""


@dataclass(frozen=True)
class ToolUsage:
    """Calls of one tool: counts, outcomes and latency quantiles."""

    upstream: str
    tool: str
    calls: int
    failures: int
    sessions: int
    p50_ms: float
    p95_ms: float
    mean_response_bytes: float


@dataclass(frozen=True)
class SearchOutcome:
    """One ``search_tools`` call and the first upstream tool its session called afterwards."""

    position: int
    session_id: str
    harness: str | None
    query: str | None
    results: tuple[str, ...]
    next_tool: str | None
    """Exposed name of the next upstream tool call in the session (None: no call followed)."""
    hit: bool | None
    """Whether ``next_tool`` was among ``results`` (None when no call followed)."""


@dataclass(frozen=True)
class SearchHitRate:
    """How often the tool a session called after ``search_tools`` was among that search's results."""

    searches: int
    followed: int
    """Searches after which the session called an upstream tool."""
    hits: int

    @property
    def rate(self) -> float | None:
        """hits / followed (None when no search was followed by a call)."""
        return self.hits / self.followed if self.followed else None
