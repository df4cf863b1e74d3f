"""The frozen mapping config models hold: lookups per call cost a dict lookup, nothing more."""

from __future__ import annotations

from harness.config.frozen import FrozenMap


def test_a_frozen_map_answers_get_and_in_from_its_dict_without_a_key_error_raised_inside():
    tried: list[str] = []

    class Watched(FrozenMap[str, int]):
        def __getitem__(self, key: str) -> int:
            tried.append(key)  # Mapping.get and Mapping.__contains__ go through here, raising KeyError
            return super().__getitem__(key)

    watched = Watched({"a": 1})
    assert watched.get("b") is None and watched.get("b", 7) == 7 and watched.get("a") == 1
    assert "a" in watched and "b" not in watched
    assert tried == []
    assert watched["a"] == 1 and dict(watched) == {"a": 1}
