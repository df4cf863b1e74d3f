"""The session's share of a forwarded ``tools/call``, in process: ``DownstreamSession.handle`` down to
the link's ``submit`` (a stand-in link that keeps nothing), no I/O, no parsing, no recording's
store. Prints the fastest run's µs per call (the least disturbed by a busy machine).

Paired against an earlier commit: ``PYTHONPATH=<its src> python bench/session_call_path.py`` and
this checkout's, alternating (bench/README.md, issue 24 item 1).
"""

from __future__ import annotations

import argparse
import time
from types import MappingProxyType
from typing import Any

from harness.events.attribution import Attribution
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.evidence.recording import CallRecorder
from harness.rules.exposure import Route, ToolView
from harness.rules.routing import Identity


class StandInLink:
    """An upstream link that takes every call and sends it nowhere."""

    available = True
    status = "running"

    def __init__(self) -> None:
        self.ids = 0

    def new_call_id(self) -> int:
        self.ids += 1
        return self.ids

    def submit(self, call: Any, message: Any, params: Any) -> None:
        pass


def session() -> DownstreamSession:
    """An initialized session whose view routes ``up__echo`` to the stand-in link."""
    route = Route("up__echo", "up", "echo", "read")
    view = ToolView(
        "bench",
        "full",
        0,
        0,
        MappingProxyType({"up__echo": route}),
        MappingProxyType({}),
        MappingProxyType({}),
        (),
        b"[]",
    )
    link = StandInLink()
    identity = Identity(Attribution(harness="h", run_id="r"), "0" * 32, "", frozenset({"read"}))
    made = DownstreamSession(
        identity=identity,
        view=view,
        links=lambda _name: link,  # type: ignore[arg-type,return-value]
        recorder=CallRecorder(lambda _event: None, "none"),
        emit=lambda _event: None,
        send=lambda _line: None,
    )
    made.handle(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    )
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=30_000, help="calls per run")
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    s = session()
    fastest = float("inf")
    for _ in range(a.runs):
        calls = [
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "up__echo", "arguments": {}},
            }
            for i in range(a.n)
        ]
        started = time.perf_counter()
        for call in calls:
            s.handle(call)
        fastest = min(fastest, (time.perf_counter() - started) / a.n * 1e6)
        s.calls.clear()
    print(f"session call path: {fastest:.3f} us/call (fastest of {a.runs} runs x {a.n:,} calls)")


if __name__ == "__main__":
    main()
