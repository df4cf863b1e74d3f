"""Ending a child process a test or a benchmark started with pipes."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading


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


def stop_daemon(daemon: subprocess.Popen[bytes], reader: threading.Thread) -> int:
    """SIGTERM a daemon (SIGKILL after 30 s), let ``reader`` finish its stderr, close the pipe.
    Returns its exit code."""
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
    try:
        code = daemon.wait(30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        code = daemon.wait(10)
    reader.join(10)
    if daemon.stderr is not None:
        daemon.stderr.close()
    return code
