"""Ending a child process a test or a benchmark started with pipes."""

from __future__ import annotations

import contextlib
import subprocess


def end_child(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    """Close its stdin (the polite stop for a stdio bridge or server), wait up to ``timeout``
    seconds, else kill it; close its pipes. Returns its exit code."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait(timeout)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code
