"""One way to talk to actors: messages, and the ask helpers of ``actors/asking.py``."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

import harness
from harness.actors.asking import ask, ask_from_thread
from harness.actors.log_writer import EventIntake, LogWriterActor, WaitFlushed
from harness.events import SessionClosed

SRC = Path(harness.__file__).parent


def _closed(i: int) -> SessionClosed:
    return SessionClosed(ts=1000.0 + i, session_id=f"s{i}", harness=None, reason="test")


def test_the_writer_answers_wait_flushed_on_the_loop_and_from_a_worker_thread(tmp_path: Path):
    intake = EventIntake()
    writer = LogWriterActor.start(tmp_path / "h.db", intake)
    intake.attach(writer)
    try:
        for i in range(100):
            intake.emit(_closed(i))
        assert ask_from_thread(writer, WaitFlushed(), timeout=10) == 100
        intake.emit(_closed(100))
        assert asyncio.run(ask(writer, WaitFlushed())) == 101
        with pytest.raises(TypeError, match="unhandled message"):
            ask_from_thread(writer, "not a message", timeout=10)
    finally:
        writer.stop()


def test_no_production_module_reaches_an_actor_through_a_pykka_proxy():
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "proxy":
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []
