"""The reasons docs/events.md lists for an upstream's exits and state changes are the ones the code emits.

The reason fields are free text, so the catalogue's docstring is the only list a reader has: these
tests read every emit site's literal (or an f-string's leading words) and check it is named there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import harness
from harness.events import UpstreamExited, UpstreamStateChanged
from harness.vocabulary import StopReason

SRC = Path(harness.__file__).parent


def _leading_words(node: ast.expr) -> Iterator[str]:
    """A string literal's text, an f-string's text up to its first placeholder, or both arms of ``a if c else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            yield head.value.rstrip(": ")
    elif isinstance(node, ast.IfExp):
        yield from _leading_words(node.body)
        yield from _leading_words(node.orelse)
    elif isinstance(node, ast.Subscript):  # f"…"[:N]
        yield from _leading_words(node.value)


def _calls(module: str, name: str) -> Iterator[ast.Call]:
    """Every call of a function or method called ``name`` in ``module`` (a path under src/harness)."""
    for node in ast.walk(ast.parse((SRC / module).read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == name:
                yield node


def _argument(module: str, name: str, position: int) -> set[str]:
    return {
        w
        for call in _calls(module, name)
        if len(call.args) > position
        for w in _leading_words(call.args[position])
    }


def _keyword(module: str, name: str, keyword: str) -> set[str]:
    return {
        w
        for call in _calls(module, name)
        for kw in call.keywords
        if kw.arg == keyword
        for w in _leading_words(kw.value)
    }


def _assigned(module: str, target: str) -> set[str]:
    """The literals assigned to a local called ``target`` in ``module``."""
    tree = ast.parse((SRC / module).read_text())
    return {
        word
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == target for t in node.targets)
        for word in _leading_words(node.value)
    }


def _requested_restarts() -> set[str]:
    """The reasons ``SupervisedUpstream.restart`` is called with anywhere in src/."""
    return {w for path in SRC.rglob("*.py") for w in _argument(str(path.relative_to(SRC)), "restart", 0)}


def _documented(event: type) -> str:
    return event.model_fields["reason"].description or ""


def test_every_upstream_state_change_reason_the_code_emits_is_documented_and_no_other():
    stops = set(get_args(StopReason))  # why a stop for good was asked: the stopped state's reason
    emitted = _argument("gateway/supervision.py", "_move", 1) | _requested_restarts() | stops
    assert emitted >= {"initialized", "exited", "flapping", "daemon stopping", "restart requested"}
    doc = _documented(UpstreamStateChanged)
    named = set(re.findall(r"`([a-z][a-z ]*)`", doc)) - {"harness restart", "shared = false", "stopped"}
    assert sorted(emitted - named) == [], f"emitted but not in UpstreamStateChanged.reason's docstring: {doc}"
    assert sorted(named - emitted) == [], f"documented but never emitted: {doc}"


def test_every_upstream_exit_reason_the_code_emits_is_documented():
    emitted = (
        _keyword("gateway/upstream/supervised.py", "UpstreamExited", "reason")
        | _argument("gateway/upstream/supervised.py", "_closed", 1)
        | _requested_restarts()
        | _assigned("gateway/upstream/transports.py", "head")
        | _argument("gateway/upstream/http_client.py", "_end", 0)
    )
    assert {"stopped", "restart requested", "exited with code", "killed by signal", "closed"} <= emitted
    doc = _documented(UpstreamExited)
    assert sorted(w for w in emitted if f"`{w}" not in doc) == [], (
        f"emitted but not in UpstreamExited.reason's docstring: {doc}"
    )
