"""Sample stores: synthetic but realistic event streams, for a notebook, a benchmark or a test.

A day in the life of a gateway: a daemon start, upstreams started with their catalogues, harness
runs with sessions, and calls whose tools, latencies, sizes and outcomes follow per-harness and
per-upstream distributions; some calls are preceded by a ``search_tools`` call and its
``tool_search.completed`` event. Deterministic for a given seed. No I/O: feed the events to a
``LogWriterActor`` to get a store.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import events as ev
from harness.naming import called_name, exposed_name
from harness.vocabulary import Outcome, UpstreamStatus

DEFAULT_CATALOGS: dict[str, list[dict[str, Any]]] = {
    "git": [
        {"name": n, "description": d, "inputSchema": {"type": "object", "properties": {"repo_path": {}}}}
        for n, d in [
            ("git_status", "Shows the working tree status"),
            ("git_diff", "Shows differences between commits"),
            ("git_log", "Shows the commit logs"),
            ("git_commit", "Records changes to the repository"),
        ]
    ],
    "github": [
        {
            "name": n,
            "description": d,
            "inputSchema": {"type": "object", "properties": {"owner": {}, "repo": {}}},
        }
        for n, d in [
            ("create_pull_request", "Create a new pull request in a GitHub repository"),
            ("get_issue", "Get details of a specific issue"),
            ("search_code", "Search for code across GitHub repositories"),
        ]
    ],
    "fetch": [
        {"name": "fetch", "description": "Fetches a URL from the internet", "inputSchema": {"type": "object"}}
    ],
    "time": [
        {"name": "get_current_time", "description": "Get the current time", "inputSchema": {"type": "object"}}
    ],
}

HARNESSES: tuple[str, ...] = ("reviewer", "coder", "triage", "docs-writer")

OUTCOME_WEIGHTS: dict[Outcome, float] = {
    "ok": 0.86,
    "tool_error": 0.06,
    "upstream_error": 0.03,
    "timeout": 0.015,
    "denied": 0.02,
    "circuit_open": 0.01,
    "cancelled": 0.005,
}


@dataclass
class SyntheticLog:
    """Parameters of a generated log; ``events()`` yields it in event-time order."""

    calls: int = 1000
    seed: int = 7
    start: float = 1_796_000_000.0
    days: float = 3.0
    catalogs: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=lambda: DEFAULT_CATALOGS)
    harnesses: Sequence[str] = HARNESSES
    search_share: float = 0.1
    """Share of calls preceded by a ``search_tools`` call (and its ``tool_search.completed``)."""
    restarts: int = 2
    """Upstream crashes (an exit and a restart with a fresh catalogue) spread over the log."""

    def events(self) -> Iterator[ev.Event]:
        """The events, ts ascending."""
        rng = random.Random(self.seed)
        t = self.start
        upstreams = sorted(self.catalogs)
        yield ev.DaemonStarted(ts=t, pid=1000, version="0.1.0", config_files=("harness.toml",))
        for i, up in enumerate(upstreams):
            t += 0.01
            yield ev.UpstreamStarted(ts=t, upstream=up, pid=2000 + i, command=f"mcp-server-{up}")
            t += 0.05
            yield _catalog(t, up, self.catalogs[up])
            yield _state(t, up, "up", "initialized")
        median_ms = {up: 0.5 + 40 * rng.random() ** 2 for up in upstreams}
        prefs = {h: _preferences(rng, self.catalogs, upstreams) for h in self.harnesses}
        runs = {h: _spawn(rng, h, t, i) for i, h in enumerate(self.harnesses)}
        for run in runs.values():
            yield run
        step = self.days * 86400.0 / max(1, self.calls)
        sessions: dict[str, tuple[str, int]] = {}
        crash_at = {int(self.calls * (i + 1) / (self.restarts + 1)) for i in range(self.restarts)}
        outcomes = list(OUTCOME_WEIGHTS)
        weights = list(OUTCOME_WEIGHTS.values())
        for n in range(self.calls):
            t += step * (0.5 + rng.random())
            harness = rng.choice(self.harnesses)
            run = runs[harness]
            if harness not in sessions or sessions[harness][1] <= 0:
                if harness in sessions:
                    yield ev.SessionClosed(
                        ts=t, session_id=sessions[harness][0], harness=harness, reason="disconnected"
                    )
                sid = f"{harness}-s{n:07d}"
                sessions[harness] = (sid, rng.randint(5, 60))
                yield ev.SessionOpened(
                    ts=t,
                    session_id=sid,
                    harness=harness,
                    run_id=run.run_id,
                    transport="stdio-bridge",
                    bridge_version=1,
                )
                yield ev.SessionInitialized(
                    ts=t + 0.002,
                    session_id=sid,
                    harness=harness,
                    protocol_version="2025-11-25",
                    client_name="agent",
                    client_version="1",
                )
                t += 0.003
            sid, left = sessions[harness]
            sessions[harness] = (sid, left - 1)
            upstream, tool = _pick(rng, prefs[harness])
            if rng.random() < self.search_share:
                yield from _search(_Turn(rng, t, sid, run), (upstream, tool), self.catalogs)
                t += 0.002
            if n in crash_at:
                yield from _crash(t, upstream, 3000 + n, self.catalogs[upstream])
                t += 1.3
            outcome = rng.choices(outcomes, weights)[0]
            latency = rng.lognormvariate(math.log(median_ms[upstream]), 0.6)
            if outcome == "timeout":
                latency = 60_000.0 + rng.random() * 50
            elif outcome in ("denied", "circuit_open"):
                latency = 0.05 + rng.random() * 0.1
            yield _call(_Turn(rng, t, sid, run), upstream, tool, outcome, latency, n)
        yield from _ending(t, sessions, runs)


def _ending(
    t: float, sessions: Mapping[str, tuple[str, int]], runs: Mapping[str, ev.HarnessSpawned]
) -> Iterator[ev.Event]:
    """Every open session closes, then every run exits with status 0 (its trajectory is whole)."""
    for owner, (sid, _left) in sessions.items():
        t += 0.01
        yield ev.SessionClosed(ts=t, session_id=sid, harness=owner, reason="disconnected")
    for run in runs.values():
        t += 0.01
        yield ev.HarnessExited(ts=t, harness=run.harness, run_id=run.run_id, pid=run.pid, returncode=0)


def _crash(ts: float, upstream: str, pid: int, tools: Sequence[Mapping[str, Any]]) -> Iterator[ev.Event]:
    """An upstream killed, restarted a second later with a fresh catalogue."""
    yield ev.UpstreamExited(ts=ts, upstream=upstream, pid=pid, returncode=-9, reason="exited")
    yield _state(ts, upstream, "restarting", "exited", delay=1.0)
    yield ev.UpstreamStarted(ts=ts + 1.0, upstream=upstream, pid=pid + 1, command=f"mcp-server-{upstream}")
    yield _catalog(ts + 1.2, upstream, tools)
    yield _state(ts + 1.2, upstream, "up", "initialized")


def _state(
    ts: float, upstream: str, state: UpstreamStatus, reason: str, delay: float | None = None
) -> ev.UpstreamStateChanged:
    """What the upstream's supervisor says (the ``upstreams`` projection's state)."""
    restarts = 1 if state == "restarting" else 0
    return ev.UpstreamStateChanged(
        ts=ts, upstream=upstream, state=state, restarts=restarts, delay_s=delay, reason=reason
    )


def _catalog(ts: float, upstream: str, tools: Sequence[Mapping[str, Any]]) -> ev.ToolCatalogFetched:
    return ev.ToolCatalogFetched(
        ts=ts,
        upstream=upstream,
        protocol_version="2025-11-25",
        server_name=f"mcp-{upstream}",
        server_version="1.0.0",
        tools_json=json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")),
        tool_count=len(tools),
    )


def _spawn(rng: random.Random, harness: str, ts: float, i: int) -> ev.HarnessSpawned:
    return ev.HarnessSpawned(
        ts=ts + 0.1 * i,
        harness=harness,
        run_id=f"run-{harness}-{rng.getrandbits(32):08x}",
        pid=5000 + i,
        adapter=("claude-code", "codex", "generic", "crush")[i % 4],
        model=("claude-x", "gpt-y", "local-z")[i % 3],
        config_hash=hashlib.sha256(harness.encode()).hexdigest(),
        trace_id=f"{rng.getrandbits(128):032x}",
        workdir=f"/home/dev/{harness}",
        restarted_run_id=None,
    )


def _preferences(
    rng: random.Random, catalogs: Mapping[str, Sequence[Mapping[str, Any]]], upstreams: Sequence[str]
) -> tuple[list[tuple[str, str]], list[float]]:
    """A harness's working set: a few upstreams, tools weighted Zipf-like."""
    mine = rng.sample(list(upstreams), k=min(len(upstreams), rng.randint(2, 4)))
    pairs = [(up, str(t["name"])) for up in mine for t in catalogs[up] if isinstance(t.get("name"), str)]
    rng.shuffle(pairs)
    pairs = pairs[:40]
    return pairs, [1.0 / (rank + 1) ** 1.1 for rank in range(len(pairs))]


def _pick(rng: random.Random, prefs: tuple[list[tuple[str, str]], list[float]]) -> tuple[str, str]:
    pairs, weights = prefs
    return rng.choices(pairs, weights)[0]


@dataclass(frozen=True)
class _Turn:
    """Where a generated call happens: the generator, the time, the session and its run."""

    rng: random.Random
    ts: float
    sid: str
    run: ev.HarnessSpawned


def _search(
    turn: _Turn, wanted: tuple[str, str], catalogs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Iterator[ev.Event]:
    rng, ts, sid, run = turn.rng, turn.ts, turn.sid, turn.run
    upstream, tool = wanted

    others = [exposed_name(up, str(t["name"])) for up in catalogs for t in catalogs[up][:3]]
    results = rng.sample(others, k=min(4, len(others)))
    if rng.random() < 0.8:  # the search found the tool the agent then called
        results.insert(rng.randint(0, len(results)), exposed_name(upstream, tool))
    query = tool.replace("_", " ")
    args = json.dumps({"query": query, "k": 5}, separators=(",", ":"))
    yield _call(turn, "harness", "search_tools", "ok", 0.8 + rng.random(), -1, args)
    yield ev.ToolSearchCompleted(
        ts=ts + 0.001,
        session_id=sid,
        harness=run.harness,
        run_id=run.run_id,
        query=query,
        k=5,
        results=tuple(dict.fromkeys(results))[:5],
        latency_ms=0.7,
    )


def _attribution(run: ev.HarnessSpawned) -> ev.Attribution:
    return ev.Attribution(run.harness, run.run_id, run.adapter, run.model, run.config_hash)


def _call(
    turn: _Turn,
    upstream: str,
    tool: str,
    outcome: Outcome,
    latency: float,
    n: int,
    args: str | None = None,
) -> ev.ToolCallCompleted:
    rng, ts, sid, run = turn.rng, turn.ts, turn.sid, turn.run
    if args is None:
        args = json.dumps({"n": n, "path": f"src/file{n % 50}.py"}, separators=(",", ":"))
    size = 60 if outcome not in ("ok", "tool_error") else int(rng.lognormvariate(6.5, 1.0)) + 40
    return ev.ToolCallCompleted(
        ts=ts,
        session_id=sid,
        latency_ms=round(latency, 3),
        **_attribution(run).fields(),
        upstream=upstream,
        tool=tool,
        tier="read",
        args_hash=hashlib.sha256(args.encode()).hexdigest(),
        args=args,
        outcome=outcome,
        error_reason=None if outcome in ("ok", "tool_error") else outcome.replace("denied", "not_permitted"),
        response_bytes=size,
        response_tokens_est=(size + 3) // 4,
        trace_id=run.trace_id,
        span_id=f"{rng.getrandbits(64):016x}",
        exposed_name=called_name(upstream, tool),
        via_call_tool=False,
        request_id=str(n),
    )


def load_catalogs(folder: str) -> dict[str, list[dict[str, Any]]]:
    """``<upstream>.json`` files holding ``{"tools": [...]}`` (the shared catalogue format)."""
    from pathlib import Path

    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        tools = data.get("tools") if isinstance(data, dict) else data
        if isinstance(tools, list):
            out[path.stem] = tools
    return out
