"""CPU time of any process on this machine, in nanoseconds, counted by the scheduler.

``process_cpu_ns(pid)`` reads the process's CPU-time clock (``clock_gettime`` on the clock id
``clock_getcpuclockid(pid)`` would return: ``(~pid << 3) | CPUCLOCK_SCHED``), the sum of the
scheduler's ``sum_exec_runtime`` over the process's threads, *including threads that have already
ended* (the kernel keeps their total in the thread group). It is the same nanosecond count as the first
field of ``/proc/<pid>/task/<tid>/schedstat``; summing those files instead would lose every thread that
ended before the read. ``/proc/<pid>/stat`` counts the same time in 10 ms ticks: too coarse for the
~0.1 ms a relay spends on a call.

``threads_cpu_ns(pid)`` splits a process's live threads by thread id, from their ``schedstat``: e.g. the
daemon's event loop (its main thread) apart from its writer.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

CPUCLOCK_SCHED = 2  # the kernel's clock type for a process's total scheduled runtime


def process_cpu_ns(pid: int) -> int | None:
    """Nanoseconds ``pid`` has spent on a CPU since it started, or None if it is gone."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | CPUCLOCK_SCHED)
    except OSError:
        return None


def threads_cpu_ns(pid: int) -> dict[int, int]:
    """Nanoseconds on a CPU of each live thread of ``pid``, by thread id (``schedstat``'s first field)."""
    out: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[int(tid)] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    return out
