"""An immutable, hashable mapping for frozen models, and the pydantic field type that uses it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, SerializerFunctionWrapHandler, WrapSerializer

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """A read-only mapping that keeps insertion order and hashes by its items."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._items: dict[K, V] = dict(items or {})

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def get(self, key: K, default: Any = None) -> Any:
        """The dict's own ``get``: a missing key (a harness with no project, per call) raises and
        catches no ``KeyError`` as ``Mapping.get`` does."""
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


def _as_dict(value: Mapping[Any, Any], handler: SerializerFunctionWrapHandler) -> Any:
    return handler(dict(value))


FrozenMapping = Annotated[Mapping[K, V], AfterValidator(FrozenMap), WrapSerializer(_as_dict)]
"""A ``Mapping[K, V]`` field stored as a :class:`FrozenMap` and dumped as a plain dict."""
