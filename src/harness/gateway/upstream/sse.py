"""Server-sent events read from a byte stream, as the HTML standard's event-stream parser reads them.

Lines end in CRLF, LF or CR (a CR at the end of a chunk waits for the next one, which may begin
with its LF); ``data`` lines of one event join with LF; a blank line dispatches the event, one with
no ``data`` is dropped; comments (``:``), ``id`` and ``retry`` are read past (nothing here
reconnects); a leading byte-order mark is skipped. Text is decoded as UTF-8 across chunk borders.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

_LINE_END: Final = re.compile(r"\r\n|\r|\n")

Event = tuple[str, str]
"""An event's type (``message`` unless it names one) and its data."""


class SseParser:
    """Feed it the bytes of a ``text/event-stream`` body; it returns the events they complete."""

    __slots__ = ("_after_cr", "_data", "_decoder", "_event", "_pending", "_started")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        """Text after the last complete line."""
        self._after_cr = False
        """The last text ended in CR: an LF that begins the next is that line end's second half."""
        self._event = ""
        self._data: list[str] = []
        self._started = False

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes, in order."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = text.endswith("\r")
        lines = _LINE_END.split(self._pending + text)
        self._pending = lines.pop()
        events: list[Event] = []
        for line in lines:
            self._line(line, events)
        return events

    def _line(self, line: str, events: list[Event]) -> None:
        if not line:
            if self._data:
                events.append((self._event or "message", "\n".join(self._data)))
            self._event = ""
            self._data = []
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
