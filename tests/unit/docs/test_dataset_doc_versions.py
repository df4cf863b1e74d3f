"""docs/dataset.md names the projection and store versions the code declares."""

from __future__ import annotations

import re
from pathlib import Path

from harness.projections import all_projections
from harness.projections.base import tables_of
from harness.store.schema import SCHEMA_VERSION

DATASET = Path(__file__).parents[3] / "docs" / "dataset.md"


def _section(title: str) -> str:
    text = DATASET.read_text()
    start = text.index(f"\n{title}\n")
    end = text.find("\n#", start + len(title) + 2)
    return text[start : end if end >= 0 else None]


def test_every_table_row_names_the_version_and_tables_its_projection_declares():
    declared = {p.name: p for p in all_projections()}
    rows = re.findall(r"^\| (.+?) \| projection `(\w+)` v(\d+) \|", _section("## Tables"), re.M)
    assert {name for _, name, _ in rows} == set(declared), "every projection has a row in ## Tables"
    for tables, name, version in rows:
        projection = declared[name]
        assert int(version) == projection.version, f"docs/dataset.md says {name} v{version}"
        for table in re.findall(r"`(\w+)`", tables):
            assert table in tables_of(projection.ddl), f"docs/dataset.md puts {table} in {name}"


def test_the_store_schema_version_in_the_tables_is_the_codes():
    found = re.search(r"`schema_version` \((\d+)\)", _section("## Tables"))
    assert found is not None and int(found.group(1)) == SCHEMA_VERSION


def test_the_change_log_ends_at_each_projections_declared_version():
    changes = re.findall(r"^\| [^|]+ \| projection `(\w+)` \| v(\d+) \|", _section("### Change log"), re.M)
    newest: dict[str, int] = {}
    for name, version in changes:
        newest[name] = max(newest.get(name, 0), int(version))
    for projection in all_projections():
        assert newest.get(projection.name, 1) == projection.version, (
            f"docs/dataset.md's change log: {projection.name} is at v{projection.version}"
        )
