"""bench/cpu_clock.py against a known load: a child that burns a known amount of CPU, part of it on a
thread that has ended before the read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from cpu_clock import process_cpu_ns, threads_cpu_ns

CHILD = """
import sys, threading, time

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass

print("ready", flush=True)
sys.stdin.readline()
worker = threading.Thread(target=burn, args=(0.3,))
worker.start()
worker.join()
burn(0.2)
print("done", flush=True)
sys.stdin.readline()
"""


def test_the_process_counter_reads_a_known_busy_loop_to_the_millisecond_including_a_thread_that_ended():
    with subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None and child.stdin is not None
        try:
            assert child.stdout.readline().strip() == "ready"
            before = process_cpu_ns(child.pid)
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "done"  # the child burns CPU time, not wall time
            after = process_cpu_ns(child.pid)
            live_threads = sum(threads_cpu_ns(child.pid).values())
        finally:
            child.kill()
    assert before is not None and after is not None
    burnt_ms = (after - before) / 1e6
    assert 500 <= burnt_ms < 515, burnt_ms  # 0.3 s on the ended thread + 0.2 s on the main one
    # The live threads' schedstat alone misses the ended thread's 0.3 s: why the process clock is read.
    assert after / 1e6 - 305 < live_threads / 1e6 < after / 1e6 - 295


def test_the_process_counter_reads_nothing_for_a_process_that_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    assert process_cpu_ns(child.pid) is None
    assert threads_cpu_ns(child.pid) == {}
