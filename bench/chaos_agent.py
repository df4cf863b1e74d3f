"""The agent of the chaos run (``bench/chaos.py``): spawned by the daemon as a ``[harness.NAME]``.

It connects through ``harness mcp`` with the official SDK client and runs 2-4 concurrent callers
for ``--duration`` seconds. Each caller calls random ``<upstream>__<tool>``: mostly ``echo`` with a
payload unique to (agent, caller, sequence number), some ``sleep`` with a unique-ish fractional ``ms``
(so an answer delivered to the wrong caller is detectable), and a few ``hang`` (ends in the gateway's
``timeout``). Every call runs under a client-side guard ``anyio.fail_after(timeout + guard)``: a guard
that fires is a hang. One JSON line per call goes to ``--out``; at the end a summary line
``{"done": true, ...}`` and the file ``<out>.done`` (``<out>.start`` holds the monotonic end of its calling
window, written when the callers start). The session then stays open (idle) until the
file ``--release`` exists (bounded by ``--hold-max``), so the daemon can be measured with every
agent still connected. The agent never crashes on a call's error: it records and counts it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

GATEWAY_REASONS = ("upstream_unavailable", "upstream_error", "timeout", "circuit_open", "unknown_tool")


class Recorder:
    """JSONL output, flushed at most every second and at the end."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.last_flush = time.monotonic()
        self.counts: Counter[str] = Counter()
        self.n = 0

    def write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.n += 1
        self.counts[record.get("outcome", "?")] += 1
        now = time.monotonic()
        if now - self.last_flush >= 1.0:
            self.file.flush()
            self.last_flush = now

    def close(self, summary: dict[str, Any]) -> None:
        self.file.write(json.dumps(summary, separators=(",", ":")) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()


def classify_error(exc: BaseException) -> tuple[str, str]:
    """(outcome class, detail) of an exception raised by ``call_tool``."""
    message = getattr(exc, "message", None)
    if message is None and getattr(exc, "error", None) is not None:
        message = getattr(exc.error, "message", None)
    if isinstance(message, str):
        reason = message.split(":", 1)[0].strip()
        if reason in GATEWAY_REASONS:
            return reason, message[:300]
        code = getattr(exc, "code", None)
        return f"mcp_error {code}", message[:300]
    return f"exception {type(exc).__name__}", repr(exc)[:300]


async def caller(
    client: Client,
    rec: Recorder,
    agent: str,
    index: int,
    rng: random.Random,
    args: argparse.Namespace,
    t_end: float,
) -> None:
    upstreams = args.upstreams.split(",")
    seq = 0
    while time.monotonic() < t_end and seq < args.max_calls:
        seq += 1
        up = rng.choice(upstreams)
        r = rng.random()
        if r < args.hang_fraction:
            tool, arguments, expected = "hang", {}, None
        elif r < args.hang_fraction + args.sleep_fraction:
            ms = round(rng.uniform(args.sleep_min_ms, args.sleep_max_ms), 3)
            tool, arguments, expected = "sleep", {"ms": ms}, f"slept {ms:g}"
        else:
            text = f"chaos:{agent}:{index}:{seq}:{rng.getrandbits(32):08x}"
            tool, arguments, expected = "echo", {"text": text}, text
        record: dict[str, Any] = {"a": agent, "c": index, "s": seq, "up": up, "tool": tool}
        if tool == "echo":
            record["text"] = arguments["text"]
        elif tool == "sleep":
            record["ms"] = arguments["ms"]
        record["t0"] = time.time()
        m0 = time.monotonic()
        record["m0"] = m0
        try:
            with anyio.fail_after(args.timeout + args.guard):
                result = await client.call_tool(f"{up}__{tool}", arguments)
        except TimeoutError:
            record["outcome"] = "hang"
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            record["outcome"], record["detail"] = classify_error(exc)
        else:
            try:
                texts = [getattr(c, "text", None) for c in result.content]
                got = texts[0] if len(texts) == 1 else texts
                if result.is_error:
                    record["outcome"] = "tool_error"
                    record["detail"] = str(got)[:300]
                else:
                    record["outcome"] = "ok"
                    record["match"] = expected is None or got == expected
                    if not record["match"]:
                        record["got"] = str(got)[:300]
            except Exception as exc:  # a bug here must cost one record, never the agent
                record["outcome"], record["detail"] = f"exception {type(exc).__name__}", repr(exc)[:300]
        m1 = time.monotonic()
        record["m1"] = m1
        record["dur"] = round(m1 - m0, 6)
        rec.write(record)
        if record["outcome"].startswith("exception"):
            await anyio.sleep(0.05)  # a broken session fails fast: do not spin


async def run(args: argparse.Namespace) -> None:
    agent = os.environ.get("HARNESS_NAME", f"agent{args.seed}")
    rng = random.Random(args.seed)
    callers = args.callers or 2 + args.seed % 3
    rec = Recorder(args.out)
    summary: dict[str, Any] = {"done": True, "agent": agent, "callers": callers, "pid": os.getpid()}
    params = StdioServerParameters(command="harness", args=["mcp"], env=dict(os.environ))
    t_connect = time.monotonic()
    try:
        with anyio.fail_after(args.duration + args.timeout + args.guard + 60):
            async with Client(params, mode="legacy", cache=None) as client:
                with anyio.fail_after(30):
                    tools = await client.list_tools()
                summary["tools"] = len(tools.tools)
                summary["connect_s"] = round(time.monotonic() - t_connect, 3)
                t_end = time.monotonic() + args.duration
                Path(args.out + ".start").write_text(json.dumps({"t_end_monotonic": t_end}))
                async with anyio.create_task_group() as tg:
                    for i in range(callers):
                        seed = rng.getrandbits(64)
                        tg.start_soon(caller, client, rec, agent, i, random.Random(seed), args, t_end)
                summary["calls"] = rec.n
                summary["outcomes"] = dict(rec.counts)
                rec.close(summary)
                Path(args.out + ".done").write_text("done\n")
                # Stay connected, idle, until the orchestrator has measured the daemon.
                deadline = time.monotonic() + args.hold_max
                while args.release and not os.path.exists(args.release) and time.monotonic() < deadline:
                    await anyio.sleep(0.1)
    except Exception as exc:
        print(f"chaos_agent {agent}: fatal: {exc!r}", file=sys.stderr, flush=True)
        if not rec.file.closed:
            summary["fatal"] = repr(exc)[:500]
            summary["calls"] = rec.n
            summary["outcomes"] = dict(rec.counts)
            rec.close(summary)
            Path(args.out + ".done").write_text("fatal\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--callers", type=int, default=0, help="0: 2 + seed %% 3")
    ap.add_argument("--upstreams", default="alpha,beta,gamma")
    ap.add_argument("--timeout", type=float, default=2.0, help="the upstreams' gateway timeout (s)")
    ap.add_argument("--guard", type=float, default=1.0, help="client guard = timeout + this (s)")
    ap.add_argument("--sleep-fraction", type=float, default=0.2)
    ap.add_argument("--hang-fraction", type=float, default=0.01)
    ap.add_argument("--sleep-min-ms", type=float, default=10.0)
    ap.add_argument("--sleep-max-ms", type=float, default=500.0)
    ap.add_argument("--max-calls", type=int, default=1_000_000, help="per caller")
    ap.add_argument("--release", default="", help="stay connected until this file exists")
    ap.add_argument("--hold-max", type=float, default=120.0)
    anyio.run(run, ap.parse_args())


if __name__ == "__main__":
    main()
