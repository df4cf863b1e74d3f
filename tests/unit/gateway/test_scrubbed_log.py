"""Upstream logs under the state dir hold no secret the daemon holds: each complete line is redacted
before it is written, a line split across writes included; control answers and the status page's
call rows are redacted as a whole."""

from __future__ import annotations

import asyncio
import base64
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.gateway.evidence import status_source
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.processes import MAX_PARTIAL_LINE, BoundedLog

SECRET = "lk-9f8e7d6c5b4a3210-SECRET"
B64 = base64.b64encode(SECRET.encode()).decode()


def _log(tmp_path: Path) -> BoundedLog:
    return BoundedLog(tmp_path / "up.log", scrub=KnownSecrets([SECRET]).scrub)


def test_a_secret_split_across_two_writes_is_redacted_before_it_reaches_the_file(tmp_path: Path):
    log = _log(tmp_path)
    log.write(f"token {SECRET[:9]}".encode())
    assert log.path.read_bytes() == b""  # the partial line waits for its end
    log.write(f"{SECRET[9:]} and {B64[:5]}".encode())
    log.write(B64[5:].encode() + b"\nnext \xff line\xff")  # not UTF-8: kept as it is
    assert log.path.read_bytes() == b"token [REDACTED] and [REDACTED]\n"
    log.close()
    assert log.path.read_bytes() == b"token [REDACTED] and [REDACTED]\nnext \xff line\xff"


def test_a_line_that_never_ends_is_written_once_it_is_long(tmp_path: Path):
    log = _log(tmp_path)
    log.write(b"x" * MAX_PARTIAL_LINE + SECRET.encode())
    assert SECRET.encode() not in log.path.read_bytes()
    assert log.path.stat().st_size == MAX_PARTIAL_LINE + len("[REDACTED]")
    log.close()


def test_a_log_without_a_scrubber_writes_at_once(tmp_path: Path):
    log = BoundedLog(tmp_path / "h.log")
    log.write(b"partial")
    assert log.path.read_bytes() == b"partial"
    log.close()


def test_a_control_answer_is_redacted_in_every_string_key_and_value_at_any_depth():
    known = KnownSecrets([SECRET])
    answer = {"lines": [f"Bearer {SECRET}", B64], SECRET: {"n": 3, "ok": True}, "kept": None}
    assert known.scrub(answer) == {
        "lines": ["Bearer [REDACTED]", "[REDACTED]"],
        "[REDACTED]": {"n": 3, "ok": True},
        "kept": None,
    }


def test_the_status_page_shows_no_held_secret_in_the_call_rows_it_reads_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    row = {"ts": "2026-12-05T07:00:00.000Z", "harness": "a", "upstream": "harness", "outcome": "unknown_tool"}
    monkeypatch.setattr(status_source, "recent_calls", lambda _db: [{**row, "tool": f"up__{SECRET}"}])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def status() -> dict[str, Any]:
        return {"pid": 1, "version": "0", "sessions": 0, "upstreams": {}, "harnesses": {}}

    try:
        page = status_source.StatusPage(
            lambda: loop, status, tmp_path / "none.db", KnownSecrets([SECRET]).scrub
        )()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    assert SECRET.encode() not in page and b"up__[REDACTED]" in page
