"""Published snapshots: an owner replaces ``current`` with a new immutable value; readers on any
thread (the loop, per call) read it with one attribute access and never ask the owner."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Published(Generic[T]):
    """Holds the latest immutable value its one owner published."""

    __slots__ = ("current",)

    def __init__(self, initial: T) -> None:
        self.current = initial
