"""Golden samples of every shipped event version, the shipped-names list, and the generated catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.events import decode, encode, registered
from harness.events.catalogue_doc import render
from harness.events.codec import UPCASTERS

GOLDEN = Path(__file__).parent / "golden"
DOCS = Path(__file__).parents[3] / "docs" / "events.md"


def shipped_names() -> list[str]:
    lines = (GOLDEN / "SHIPPED").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def golden_files() -> list[Path]:
    return sorted(GOLDEN.glob("*.v*.json"))


@pytest.mark.parametrize("path", golden_files(), ids=lambda p: p.name)
def test_every_golden_sample_decodes_and_re_encodes(path):
    sample = json.loads(path.read_text())
    name, version, data = sample["name"], sample["version"], sample["data"]
    assert path.name == f"{name}.v{version}.json"
    assert name in registered(), f"{name!r} was shipped but is no longer registered"
    event = decode(name, version, json.dumps(data))
    again = json.loads(encode(event))
    if version == type(event).VERSION:
        assert again == data  # the current version round-trips field for field
    assert decode(name, type(event).VERSION, encode(event)) == event


def test_every_registered_event_has_a_golden_sample_of_every_version():
    have = {p.name for p in golden_files()}
    for name, cls in registered().items():
        for version in range(1, cls.VERSION + 1):
            assert f"{name}.v{version}.json" in have, f"add tests/unit/events/golden/{name}.v{version}.json"
            if version < cls.VERSION:
                assert (name, version) in UPCASTERS, f"{name} v{version} has no upcaster"


def test_no_shipped_stored_name_is_removed_and_every_registered_one_is_listed():
    shipped = shipped_names()
    assert len(shipped) == len(set(shipped)), "a name appears twice in SHIPPED"
    assert sorted(set(shipped) - set(registered())) == [], "a shipped stored name is no longer registered"
    assert sorted(set(registered()) - set(shipped)) == [], "a new event: append its name to golden/SHIPPED"


def test_golden_samples_only_name_shipped_events():
    shipped = set(shipped_names())
    for path in golden_files():
        assert path.name.rsplit(".v", 1)[0] in shipped


def test_every_event_field_is_documented():
    for name, cls in registered().items():
        for field, info in cls.model_fields.items():
            assert info.description, f"{name}.{field} has no docstring (it documents docs/events.md)"


def test_docs_events_md_matches_the_code():
    assert DOCS.read_text() == render(), (
        "docs/events.md is stale: python -m harness.events.catalogue_doc > docs/events.md"
    )
