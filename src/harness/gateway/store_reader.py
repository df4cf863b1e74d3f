"""Reads of the store the live daemon needs (tool search, top-k), on one thread off the loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import apsw

from harness.events import ToolCatalogFetched, decode
from harness.reading import StoreView
from harness.store import StoreNotCreated, open_read_only

log = logging.getLogger("harness.store_reader")


class StoreReader:
    """One read-only connection used from one worker thread; answers come back on the loop."""

    def __init__(self, db: Path) -> None:
        self._db = db
        self._conn: apsw.Connection | None = None
        self._view: StoreView | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-reader")
        self._warming = False
        self._closing = False

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            self._conn = open_read_only(self._db)
        return self._conn

    def search(
        self,
        query: str,
        k: int,
        allowed: frozenset[str],
        done: Callable[[Any, BaseException | None], None],
        *,
        upstreams: frozenset[str] | None = None,
    ) -> None:
        """Run a tool search over ``allowed`` names of the ``upstreams`` keys (every one when None);
        ``done(hits, error)`` is called on the loop."""
        from harness.search.ranking import search

        loop = asyncio.get_running_loop()

        def work() -> None:
            try:
                hits = search(self._connection(), query, k=k, allowed=allowed, upstreams=upstreams)
            except Exception as exc:  # the caller answers with an error, the daemon goes on
                loop.call_soon_threadsafe(done, None, exc)
            else:
                loop.call_soon_threadsafe(done, hits, None)

        self._pool.submit(work)

    def warm_search(self, flushed: Callable[[], object]) -> None:
        """Build the search's in-memory snapshot of the tool index now, in the worker thread, after
        ``flushed()`` returns (the writer has committed what was emitted so far, the new catalogue
        among it), so that no agent's search pays for it. One queued warm-up covers every catalogue
        committed before it runs (the daemon starts many upstreams at once)."""
        if self._warming:
            return
        self._warming = True

        def work() -> None:
            self._warming = False
            if self._closing:  # the daemon is stopping: nobody will search
                return
            try:
                flushed()
                from harness.search.bm25 import warm

                warm(self._connection())
            except Exception:  # best effort: the next search builds it instead
                log.debug("warming the tool search failed", exc_info=True)

        self._pool.submit(work)

    async def search_warmed(self) -> bool:
        """Whether the search's snapshot is of the tool index as it is now (``warm_search`` ran)."""
        from harness.search.bm25 import warmed

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: warmed(self._connection()))

    async def top_tools(self, harness: str, k: int) -> tuple[tuple[str, str], ...]:
        """The (upstream, tool) pairs ``harness`` called most in the last 30 days of event time."""
        from harness.projections.top_k import top_tools

        def work() -> tuple[tuple[str, str], ...]:
            return tuple(top_tools(self._connection(), harness, k))

        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    async def calls(self, **filters: Any) -> list[dict[str, Any]]:
        """Call-log rows, as :meth:`harness.reading.StoreView.calls` gives them for ``filters``."""

        def work() -> list[dict[str, Any]]:
            if self._view is None:
                self._view = StoreView(self._db)
            return self._view.calls(**filters)

        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    async def latest_catalogue(self, upstream: str) -> ToolCatalogFetched | None:
        """The newest catalogue event of ``upstream`` that the tool index holds (found through the
        index's ``position`` column: no scan of the log), or None (no tools kept)."""

        def work() -> ToolCatalogFetched | None:
            try:
                row = (
                    self._connection()
                    .execute(
                        "SELECT e.name, e.version, e.data FROM events AS e WHERE e.position ="
                        " (SELECT max(position) FROM tool_index WHERE upstream = ?)",
                        (upstream,),
                    )
                    .fetchone()
                )
            except (apsw.SQLError, StoreNotCreated):  # no tool index yet: a new store keeps none
                return None
            event = decode(*row) if row is not None else None
            return event if isinstance(event, ToolCatalogFetched) else None

        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def close(self) -> None:
        """Stop the worker (a warm-up still queued is skipped) and close the connections."""
        self._closing = True
        self._pool.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._view is not None:
            self._view.close()
            self._view = None
