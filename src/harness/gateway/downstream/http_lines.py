"""What one HTTP response waits on: the lines the session sends back, and the client's side of the
connection. The request's own coroutine awaits one future that a line (or the client going away)
resolves in place: no queue, no task and no extra read per call.

The client going away is seen where the socket is read: the connection's :class:`ClientReader` is
told of the end of the stream or a reset by its protocol (``eof_received``, ``connection_lost``)
whether or not anything is reading it, and wakes the response that waits on it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable


class ClientGone(ConnectionError):
    """The client closed the connection while it waited for an answer."""


class ClientReader(asyncio.StreamReader):
    """A connection's reader that also tells the response waiting on it when the client is gone."""

    closed = False
    """The client ended its side of the connection (EOF or a reset)."""
    on_close: Callable[[], None] | None = None

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit, loop)
        self.loop = loop

    def feed_eof(self) -> None:
        super().feed_eof()
        self._client_closed()

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        self._client_closed()

    def _client_closed(self) -> None:
        self.closed = True
        if self.on_close is not None:
            self.on_close()


class Lines:
    """The lines for one response (a POST's, or the GET stream), in order; None ends them."""

    def __init__(self) -> None:
        self._items: deque[bytes | None] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.ended = False
        """The end (None) was put."""

    def put(self, line: bytes | None) -> None:
        self._items.append(line)
        if line is None:
            self.ended = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def ready(self) -> list[bytes | None]:
        """Every line there now (taken)."""
        items = list(self._items)
        self._items.clear()
        return items

    def answers(self) -> list[bytes]:
        """Every line there now (taken), the end marker left out."""
        return [line for line in self.ready() if line is not None]

    async def wait(self, reader: ClientReader) -> None:
        """Until a line is there; :class:`ClientGone` if the client goes away first."""
        await self.until(reader, lambda: bool(self._items))

    async def until(self, reader: ClientReader, done: Callable[[], bool]) -> None:
        """Until ``done()`` holds, checked as each line comes; :class:`ClientGone` if the client goes
        away first."""
        while not done():
            if reader.closed:
                raise ClientGone
            self._waiter = reader.loop.create_future()
            reader.on_close = self._wake
            try:
                await self._waiter
            finally:
                self._waiter = None
                reader.on_close = None
