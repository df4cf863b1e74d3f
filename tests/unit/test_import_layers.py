"""The import graph of ``src/harness``: layers flow one way and no module imports itself back.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import harness

SRC = Path(harness.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("harness", "harness.vocabulary", "harness.naming", "harness.config"),
    ("harness.events",),
    ("harness.rules",),
    ("harness.store",),
    ("harness.search",),
    ("harness.projections",),
    ("harness.reading", "harness.replay"),
    ("harness.actors",),
    ("harness.gateway",),
    ("harness.cli",),
    ("harness.demo", "harness.sample_store"),
    ("harness.main", "harness.__main__"),
)
"""Bottom to top: a module may import its own layer and the layers below it, never one above."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _layer(module: str) -> int:
    best, found = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found >= 0, f"{module} belongs to no layer: add it to LAYERS"
    return found


def _imports(module: str) -> set[str]:
    """The harness modules ``module`` imports (a ``from X import y`` names X.y when that is a module)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: _imports(module) for module in MODULES}


def test_every_import_points_to_the_same_layer_or_one_below() -> None:
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
    ]
    assert not upward, "\n".join(sorted(upward))


def test_there_is_no_import_cycle() -> None:
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [])
    assert not cycles, "\n".join(cycles)


def test_importing_the_events_pulls_in_neither_pykka_nor_apsw() -> None:
    code = "import sys, harness.events; print(sorted({'pykka', 'apsw'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_bridge_imports_only_the_standard_library() -> None:
    code = (
        "import sys; before = set(sys.modules); import harness.cli.bridge; "
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names "
        "and not m.startswith('harness')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_bridge_loads_no_thread_typing_or_event_loop_module_until_it_must_copy() -> None:
    heavy = ("threading", "typing", "asyncio", "logging", "subprocess", "harness.gateway", "harness.config")
    code = (
        "import sys; import harness.main, harness.cli.bridge; "
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
