"""The daemon's event writer under load, in a process of its own, for kill -9 tests.

Runs the real ``LogWriterActor`` + ``EventIntake`` on ``argv[1]`` and emits realistic call events
(``harness.sample_store``) as fast as the writer takes them: a chunk of ``CHUNK`` events whenever
the intake holds fewer than ``MAX_BATCH`` (so nothing is dropped and the backlog stays bounded).
It reports on stdout, one line each, flushed:

* ``ready`` once the writer has opened the store;
* ``E <n>`` before emitting events n+1 … n+CHUNK;
* ``C <position>`` after each commit (the writer's ``on_commit``, called once the commit returned).

It never exits on its own: the test kills it with SIGKILL.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from harness.actors.log_writer import MAX_BATCH, EventIntake, LogWriterActor
from harness.sample_store import SyntheticLog

CHUNK = 512

_lock = threading.Lock()


def say(line: str) -> None:
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main() -> None:
    path = Path(sys.argv[1])
    events = list(SyntheticLog(calls=3_000, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 1).events())
    intake = EventIntake()
    ref = LogWriterActor.start(path, intake, on_commit=lambda position: say(f"C {position}"))
    ref.proxy().statistics().get(timeout=30)
    intake.attach(ref)
    say("ready")
    emitted = 0
    while True:
        if len(intake) >= MAX_BATCH:
            time.sleep(0.0005)
            continue
        say(f"E {emitted}")
        for i in range(CHUNK):
            intake.emit(events[(emitted + i) % len(events)])
        emitted += CHUNK


if __name__ == "__main__":
    main()
