"""Every package the code and the shipped notebook import is declared in pyproject.toml: at run
time, or in the extra that needs it (``otel``, ``analysis``)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OPTIONAL_MODULES = {"opentelemetry": "otel"}
"""Top-level modules only an extra brings, imported where that extra is used (guarded)."""
DYNAMIC_IMPORTS = {"pandas": "analysis", "pyarrow": "analysis"}
"""Modules imported by name at run time (``importlib.import_module``): not seen by the parser."""


def _declared(extra: str | None = None) -> set[str]:
    reqs = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    return {_norm(Requirement(r).name) for r in reqs}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def _third_party(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "harness"}


@functools.cache
def _installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    return {_norm(d) for d in _installed().get(module, [])}


def test_every_package_the_source_imports_is_declared_for_run_time_or_in_its_extra():
    modules: set[str] = set()
    for path in (ROOT / "src" / "harness").rglob("*.py"):
        modules |= _third_party(ast.parse(path.read_text()))
    runtime = _declared()
    undeclared = {}
    for module in sorted(modules):
        allowed = _declared(OPTIONAL_MODULES[module]) if module in OPTIONAL_MODULES else runtime
        if not _distributions(module) & allowed:
            undeclared[module] = sorted(_distributions(module))
    assert undeclared == {}, f"imported but not declared in pyproject.toml: {undeclared}"
    for module, extra in DYNAMIC_IMPORTS.items():
        assert _distributions(module) & _declared(extra), f"{module} is not in the {extra!r} extra"


def test_the_analysis_extra_declares_every_package_the_notebook_imports():
    notebook = json.loads((ROOT / "docs" / "notebooks" / "call-log.ipynb").read_text())
    modules: set[str] = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            modules |= _third_party(ast.parse("".join(cell["source"])))
    declared = _declared("analysis") | _declared()
    missing = {m: sorted(_distributions(m)) for m in modules if not _distributions(m) & declared}
    assert missing == {}, f"the notebook imports packages the analysis extra lacks: {missing}"
