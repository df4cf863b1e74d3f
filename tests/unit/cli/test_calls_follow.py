"""`harness calls --follow`: the rows already logged, then each new one as the writer commits it,
until interrupted (a real store, a real writer thread, the real CLI in a child process)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading

from tests_support import call_event

from harness.actors.log_writer import EventIntake, LogWriterActor


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_calls_follow_prints_old_rows_then_new_ones_as_they_commit_and_stops_on_interrupt(tmp_path):
    intake = EventIntake()
    writer = LogWriterActor.start(tmp_path / "harness.db", intake)
    intake.attach(writer)
    proc = None
    try:
        for i in range(2):
            intake.emit(call_event(i))
        writer.proxy().wait_flushed().get(timeout=10)
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "calls", "--follow", "--json", "--state-dir", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = _lines(proc)
        first = [json.loads(lines.get(timeout=20)) for _ in range(2)]
        assert [row["tool"] for row in first] == ["tool0", "tool1"]
        for i in range(2, 5):
            intake.emit(call_event(i, harness="late"))
        writer.proxy().wait_flushed().get(timeout=10)
        later = [json.loads(lines.get(timeout=10)) for _ in range(3)]
        assert [(row["harness"], row["tool"]) for row in later] == [
            ("late", "tool2"),
            ("late", "tool3"),
            ("late", "tool0"),
        ]
        assert lines.empty()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
    finally:
        writer.stop()
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
