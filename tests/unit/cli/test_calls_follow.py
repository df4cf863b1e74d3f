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


def test_calls_after_a_position_resumes_there_with_and_without_follow_and_every_line_has_the_same_keys(
    tmp_path,
):
    intake = EventIntake()
    writer = LogWriterActor.start(tmp_path / "harness.db", intake)
    intake.attach(writer)
    proc = None
    try:
        # call 1 starts before call 0 but is logged after it: lines come by start time
        intake.emit(call_event(0, ts=1_796_000_010.0))
        intake.emit(call_event(1, ts=1_796_000_005.0))
        intake.emit(call_event(2))
        writer.proxy().wait_flushed().get(timeout=10)
        cmd = [sys.executable, "-m", "harness", "calls", "--json", "--state-dir", str(tmp_path)]
        every = [
            json.loads(line)
            for line in subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()
        ]
        assert len({frozenset(row) for row in every}) == 1 and "position" in every[0]
        after_one = subprocess.run([*cmd, "--after", "1"], capture_output=True, text=True).stdout.splitlines()
        assert sorted(json.loads(line)["position"] for line in after_one) == [2, 3]
        proc = subprocess.Popen([*cmd, "--follow", "--after", "2"], stdout=subprocess.PIPE, text=True)
        lines = _lines(proc)
        assert json.loads(lines.get(timeout=20))["position"] == 3
        intake.emit(call_event(3))
        writer.proxy().wait_flushed().get(timeout=10)
        assert json.loads(lines.get(timeout=10))["position"] == 4
        assert lines.empty()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
    finally:
        writer.stop()
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
