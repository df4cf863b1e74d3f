"""docs/architecture.md's rooms and owners tables describe the code as it is.

"Rooms" must place every top-level module of src/harness at the layer tests/unit/test_import_layers.py
enforces; "Who owns what" must name only things that exist and every actor class there is.
"""

from __future__ import annotations

import ast
import asyncio
import re
from functools import cache
from pathlib import Path

from test_import_layers import LAYERS, SRC

from harness.config.unbuilt import NOT_SUPPORTED_YET
from harness.events import registered

STDLIB = frozenset(dir(asyncio))
ARCHITECTURE = Path(__file__).parents[3] / "docs" / "architecture.md"


def _table(title: str) -> list[list[str]]:
    """The rows (cells) of the first table under ``title``."""
    text = ARCHITECTURE.read_text()
    lines = text[text.index(f"\n{title}\n") :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[start + 2 : end]]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@cache
def _nodes() -> tuple[ast.AST, ...]:
    """Every syntax node of src/harness."""
    return tuple(node for path in SRC.rglob("*.py") for node in ast.walk(ast.parse(path.read_text())))


@cache
def _defined_names() -> frozenset[str]:
    """Every class, function, method and class attribute defined in src/harness."""
    names: set[str] = set()
    for node in _nodes():
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(names)


def _actor_classes() -> set[str]:
    """The pykka actor classes in src/harness."""
    return {
        node.name
        for node in _nodes()
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).startswith("pykka.") for b in node.bases)
    }


def _top_level_modules() -> set[str]:
    skip = {"__init__", "__main__"}
    return {p.stem for p in SRC.iterdir() if p.suffix == ".py" or any(p.glob("*.py"))} - skip


def _layer_of(module: str) -> int:
    dotted = f"harness.{module}"
    return next((n for n, prefixes in enumerate(LAYERS) if dotted in prefixes), 0)  # else: the root's layer


def test_the_rooms_table_places_every_top_level_module_at_its_enforced_layer():
    placed: dict[str, int] = {}
    for layer, packages, *_ in _table("## Rooms: packages and their layers"):
        for name in _ticked(packages):
            placed[name.rstrip("/")] = int(layer)
    assert sorted(_top_level_modules() - set(placed)) == [], "modules missing from the rooms table"
    assert sorted(set(placed) - _top_level_modules()) == [], "the rooms table names modules that do not exist"
    wrong = {name: (layer, _layer_of(name)) for name, layer in placed.items() if layer != _layer_of(name)}
    assert wrong == {}, "(documented layer, enforced layer) differ"


def test_every_actor_class_has_a_row_in_who_owns_what():
    owners = {name for row in _table("## Who owns what") for name in _ticked(row[1])}
    assert _actor_classes() >= {"PolicyActor", "LogWriterActor"}
    assert sorted(_actor_classes() - owners) == []


def test_every_name_in_who_owns_what_exists_in_the_code():
    events = set(registered())
    missing: list[str] = []
    for row in _table("## Who owns what"):
        for ticked in (t for cell in row for t in _ticked(cell)):
            if ticked.endswith(".py"):
                if not any(path.as_posix().endswith(f"/{ticked}") for path in SRC.rglob("*.py")):
                    missing.append(ticked)
            elif ticked in events or " " in ticked or "/" in ticked or ticked.endswith(".json"):
                continue  # an event, a command, a JSON-RPC method, a file the daemon writes
            else:
                for part in re.findall(r"[A-Za-z_]\w*", ticked):
                    if (part[0].isupper() or "_" in part) and part not in _defined_names() | STDLIB:
                        missing.append(f"{part} (in `{ticked}`)")
    assert missing == [], "named in docs/architecture.md's owners table but not in src/harness"


def test_every_configuration_key_refused_as_unbuilt_is_in_not_built_yet():
    text = ARCHITECTURE.read_text()
    not_built = text[text.index("\n## Not built yet\n") :]
    assert [key for key in NOT_SUPPORTED_YET if f"`{key}`" not in not_built] == []
