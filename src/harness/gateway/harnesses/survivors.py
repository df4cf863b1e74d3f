"""Harnesses a killed daemon left running, found and stopped by the next daemon on the state dir.

The spawner records each running harness (name, pid, start time, run id) in ``running.json`` in the
state dir, rewritten atomically at every spawn and exit. A daemon killed with ``kill -9`` leaves it
behind: the next one (holding the state dir's lock, so no other daemon owns them) stops whatever of
those harnesses still runs before it spawns its own, so one workdir never has two agents.

A process is stopped only when it is provably one of them (a pid may since be another program's):
the harness itself, alive with the recorded start time (``/proc/PID/stat`` field 22) on the same
boot; or a process of its session, started no earlier, while that leader is alive (the session is
then still its), or carrying the run's ``HARNESS_RUN_ID`` in its environment (the leader died: its
children keep that id unless they drop the environment). Each is signalled through a pidfd opened
before its start time is checked again, so a pid reused in between is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.events import HarnessSurvivorStopped
from harness.gateway.harnesses.subreaper import stat_fields

log = logging.getLogger(__name__)

PROC = Path("/proc")
TERM_GRACE_S = 3.0
"""How long survivors get to exit after SIGTERM before SIGKILL."""
KILLED_WAIT_S = 1.0


@dataclass(frozen=True)
class Recorded:
    """One running harness as the spawner recorded it."""

    name: str
    pid: int
    start: int
    """Its start time in clock ticks after boot (``/proc/PID/stat`` field 22)."""
    run_id: str


def survivor_line(stopped: HarnessSurvivorStopped) -> str:
    """What the daemon says on stderr about a survivor it stopped."""
    pids = ", ".join(str(pid) for pid in stopped.pids)
    text = f"harness {stopped.harness}: stopped a survivor of the previous daemon, pid {pids}"
    if stopped.leader_alive:
        return text + f" (run {stopped.run_id})"
    return text + f" (left by run {stopped.run_id}, whose harness process {stopped.pid} had ended)"


def boot_id() -> str:
    """This boot's id (a start time is only comparable within one boot)."""
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[bytes] | None:
    try:
        return stat_fields(pid, PROC)
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """``pid``'s start time in clock ticks after boot; None if it is gone (or a zombie)."""
    fields = _stat(pid)
    if fields is None or fields[0] == b"Z":
        return None
    return int(fields[19])


class RunningRecord:
    """``running.json``: the harnesses running now, rewritten atomically on every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._boot = boot_id()
        self._running: dict[str, Recorded] = {}

    def add(self, name: str, pid: int, run_id: str) -> None:
        """Record a harness just spawned (its start time read now)."""
        start = start_time(pid)
        if start is not None:
            self._running[name] = Recorded(name, pid, start, run_id)
            self._write()

    def remove(self, name: str, pid: int) -> None:
        """Forget a harness that ended (unless a newer spawn of it is recorded)."""
        if (rec := self._running.get(name)) is not None and rec.pid == pid:
            del self._running[name]
            self._write()

    def clear(self) -> None:
        """Record that nothing runs."""
        self._running.clear()
        self._write()

    def _write(self) -> None:
        data = {"boot_id": self._boot, "harnesses": [asdict(r) for r in self._running.values()]}
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            temp.write_text(json.dumps(data))
            os.replace(temp, self.path)
        except OSError as exc:  # the state dir's trouble shows elsewhere; a harness still runs
            log.warning("%s: cannot record the running harnesses (%s)", self.path, exc.strerror or exc)

    def previous(self) -> list[Recorded]:
        """What a previous daemon recorded on this boot (nothing if unreadable)."""
        try:
            data = json.loads(self.path.read_text())
            if data.get("boot_id") != self._boot:
                return []
            return [
                Recorded(str(e["name"]), int(e["pid"]), int(e["start"]), str(e["run_id"]))
                for e in data["harnesses"]
            ]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return []


def _session(sid: int) -> Iterator[tuple[int, int]]:
    """(pid, start time) of every live process in session ``sid``."""
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        with contextlib.suppress(IndexError, ValueError):
            if fields is not None and fields[0] != b"Z" and int(fields[3]) == sid:
                yield int(entry.name), int(fields[19])


def _carries_run(pid: int, run_id: str) -> bool:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return f"HARNESS_RUN_ID={run_id}".encode() in environ.split(b"\0")


def _lineage() -> set[int]:
    """This process and its ancestors (a daemon started from inside a harness never stops itself
    or what started it)."""
    lineage, pid = set(), os.getpid()
    while pid > 0 and pid not in lineage:
        lineage.add(pid)
        fields = _stat(pid)
        pid = int(fields[1]) if fields is not None else 0
    return lineage


def survivors_of(rec: Recorded) -> tuple[list[tuple[int, int]], bool]:
    """(pid, start time) of each process of ``rec`` still running, leader first, and whether the
    leader is one of them."""
    spared = _lineage()
    leader = start_time(rec.pid) == rec.start and rec.pid not in spared
    found = [(rec.pid, rec.start)] if leader else []
    for pid, started in _session(rec.pid):
        if pid == rec.pid or pid in spared or started < rec.start:
            continue
        if leader or _carries_run(pid, rec.run_id):
            found.append((pid, started))
    return found, leader


def _pidfd(pid: int, start: int) -> int | None:
    """A pidfd of ``pid`` if it is still the process that started at ``start``."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    if start_time(pid) != start:  # gone, or the pid is another process's now
        os.close(fd)
        return None
    return fd


def _signal_and_wait(fds: dict[int, int], sig: int, within: float) -> None:
    """Send ``sig`` to each process, then wait up to ``within`` s for them to exit; the pidfds of
    those that exited are closed and dropped."""
    for fd in fds.values():
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, sig)
    deadline = time.monotonic() + within
    while fds and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(list(fds.values()), [], [], left)
        for pid in [p for p, fd in fds.items() if fd in ready]:
            os.close(fds.pop(pid))


def _stop(processes: list[tuple[int, int]], grace: float) -> None:
    """SIGTERM each (pid, start time) that is still that process, SIGKILL after ``grace`` s."""
    fds = {pid: fd for pid, start in processes if (fd := _pidfd(pid, start)) is not None}
    _signal_and_wait(fds, signal.SIGTERM, grace)
    _signal_and_wait(fds, signal.SIGKILL, KILLED_WAIT_S)
    for fd in fds.values():
        os.close(fd)


def stop_survivors(record: RunningRecord, grace: float = TERM_GRACE_S) -> list[HarnessSurvivorStopped]:
    """Stop every process still running of the harnesses a previous daemon recorded (SIGTERM, then
    SIGKILL after ``grace`` s), and start the record afresh; what was stopped, one event a harness
    (the leader first in its ``pids`` if it was alive). Blocking: run it in a thread."""
    found = [(rec, *survivors_of(rec)) for rec in record.previous()]
    _stop([process for _, processes, _ in found for process in processes], grace)
    record.clear()
    now = time.time()
    return [
        HarnessSurvivorStopped(
            ts=now,
            harness=rec.name,
            run_id=rec.run_id,
            pid=rec.pid,
            leader_alive=leader,
            pids=tuple(pid for pid, _ in processes),
        )
        for rec, processes, leader in found
        if processes
    ]
