"""The stored envelope of an event: its position, stored name, version and correlation."""

from __future__ import annotations

from harness.events.base import Event
from harness.events.codec import decode


class Envelope:
    """An event as stored: its position in the log, its stored name and version, and correlation.

    ``Envelope.stored`` wraps a stored row without decoding it: ``event`` is decoded (and upcast)
    on first access, so a fold whose projections read the row's JSON in SQL never pays for it.
    ``version`` is the version the row was written with.
    """

    __slots__ = ("_data", "_event", "correlation", "name", "position", "ts", "version")

    def __init__(self, position: int, name: str, version: int, correlation: str, event: Event) -> None:
        self.position = position
        self.name = name
        self.version = version
        self.correlation = correlation
        self.ts: float = event.ts
        """The event's own time."""
        self._event: Event | None = event
        self._data = ""

    @classmethod
    def stored(
        cls, position: int, ts: float, name: str, version: int, correlation: str, data: str
    ) -> Envelope:
        """An envelope over a stored row; the event is decoded when first asked for."""
        env = cls.__new__(cls)
        env.position, env.name, env.version, env.correlation, env.ts = (
            position,
            name,
            version,
            correlation,
            ts,
        )
        env._event, env._data = None, data
        return env

    @property
    def decoded(self) -> bool:
        """Whether the event object exists already (live writes) or would be decoded (stored rows)."""
        return self._event is not None

    @property
    def event(self) -> Event:
        """The event (decoded from the stored row, and upcast, on first access)."""
        event = self._event
        if event is None:
            event = self._event = decode(self.name, self.version, self._data)
        return event

    def __repr__(self) -> str:
        return f"Envelope({self.position}, {self.name!r}, v{self.version})"
