"""The control plane: the handlers behind ``harness list``, ``status``, ``describe``, ``logs``,
``start``, ``stop``, ``restart`` and ``reload`` (and the facade tools, which call the same handlers).
Each request carries its :class:`~harness.rules.access.Caller`; a command its tier does not allow is
refused with ``not_permitted``, and every answer holds only what the caller may see
(:mod:`harness.rules.scope`), with the secret values the daemon holds for upstreams redacted. The
daemon is reached through :class:`Fleet`, so this module does not import it."""

from __future__ import annotations

import asyncio
import os
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from harness import __version__
from harness.actors.log_stall import LogHealth
from harness.config import Config
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.event_loop import loop_name
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.harnesses.spawner import HarnessSpawner
from harness.gateway.processes import tail_lines
from harness.gateway.state_dir import StatePaths
from harness.gateway.status_rows import folder, unshared_row, upstream_row, with_twin
from harness.gateway.upstream.supervised import SupervisedUpstream
from harness.gateway.upstream.unshared import UnsharedUpstreams, label
from harness.rules.access import OPERATOR, Caller, check
from harness.rules.scope import listed, may_see_harness, may_see_upstream, sees_siblings, unseen
from harness.vocabulary import HarnessState

DEFAULT_LOG_LINES = 50
MAX_LOG_LINES = 10_000


class Fleet(Protocol):
    """What the control plane reads and drives."""

    @property
    def config(self) -> Config:
        """The running configuration."""
        ...

    @property
    def paths(self) -> StatePaths:
        """The state dir's files (upstream logs live there)."""
        ...

    @property
    def upstreams(self) -> Mapping[str, SupervisedUpstream]:
        """Every upstream by key."""
        ...

    @property
    def unapproved(self) -> tuple[Path, ...]:
        """Project files of the configuration whose upstreams do not run: not approved as they are."""
        ...

    @property
    def unshared(self) -> UnsharedUpstreams:
        """The per-harness instances of ``shared = false`` upstreams."""
        ...

    @property
    def twins(self) -> Mapping[SupervisedUpstream, SupervisedUpstream]:
        """The 2026-07-28 twin of each instance that has one, by that instance."""
        ...

    @property
    def sessions(self) -> Iterable[DownstreamSession]:
        """The live downstream sessions."""
        ...

    @property
    def known(self) -> KnownSecrets:
        """The secret values the daemon holds for upstreams (redacted from every answer)."""
        ...

    @property
    def log_health(self) -> LogHealth:
        """Whether the log writer is writing (a stall and its reason, drops)."""
        ...

    @property
    def spawner(self) -> HarnessSpawner | None:
        """Starts and stops harness processes (None before the daemon is ready)."""
        ...

    async def reload(self) -> dict[str, Any]:
        """Re-read the configuration."""
        ...

    async def restart_harness(self, name: str) -> None:
        """Stop a harness and spawn it again with a fresh token."""
        ...


Handler = Callable[[dict[str, Any], Caller], Awaitable[Any]]


class ControlPlane:
    """Answers one control request by name, with its caller's rights."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._handlers: dict[str, Handler] = {
            "list": self._list,
            "status": self._status,
            "describe": self._describe,
            "logs": self._logs,
            "reload": self._reload,
            "restart": self._restart,
            "stop": self._stop,
            "start": self._start,
        }
        self._lifecycle: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def answer(self, command: str, args: dict[str, Any], caller: Caller) -> Any:
        """The result of one control request; ValueError for an unknown command or bad arguments,
        :class:`~harness.rules.access.NotPermitted` when the caller may not run it."""
        handler = self._handlers.get(command)
        if handler is None:
            raise ValueError(f"unknown control command {command!r}")
        check(caller, command)
        return self._fleet.known.scrub(await handler(args, caller))

    # ---------------------------------------------------------------- read

    def _harness_state(self, name: str) -> tuple[HarnessState, Any]:
        spawner = self._fleet.spawner
        return ("stopped", None) if spawner is None else (spawner.state_of(name), spawner.processes.get(name))

    def _session_count(self, harness: str) -> int:
        return sum(1 for s in self._fleet.sessions if s.identity.harness == harness)

    async def _list(self, _args: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        fleet = self._fleet
        rows = []
        for name, cfg in sorted(fleet.config.harnesses.items()):
            state, proc = self._harness_state(name)
            policy = fleet.config.policy_for(name)
            rows.append(
                {
                    "name": name,
                    "adapter": cfg.harness,
                    "state": state,
                    "pid": proc.pid if proc else None,
                    "run_id": proc.run_id if proc else None,
                    "policy": policy.name if policy else None,
                    "project": folder(fleet.config.project_of(name)),
                    "sessions": self._session_count(name),
                }
            )
        return listed(caller, rows)

    def _unshared_row(self, name: str, caller: Caller) -> dict[str, Any]:
        """A ``shared = false`` upstream: its instances of the harnesses the caller sees."""
        instances = {
            harness: up
            for harness, up in sorted(self._fleet.unshared.of(name).items())
            if sees_siblings(caller) or may_see_harness(caller, harness)
        }
        return unshared_row(instances, self._fleet.config.upstreams[name].project, self._fleet.twins)

    def _upstream_rows(self, caller: Caller) -> dict[str, dict[str, Any]]:
        """The row of every upstream the caller sees, by key, sorted (an unshared one's row sums up
        its instances; a twin's row follows its instance's, as ``KEY~2026-07-28``)."""
        fleet = self._fleet
        rows = {key: with_twin(key, up, fleet.twins) for key, up in fleet.upstreams.items()}
        rows.update(
            (n, {n: self._unshared_row(n, caller)}) for n, c in fleet.config.upstreams.items() if not c.shared
        )
        return {
            name: row
            for key in sorted(rows)
            if may_see_upstream(caller, key)
            for name, row in rows[key].items()
        }

    async def _status(self, _args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """The daemon, its upstreams and harnesses: all for the operator; for a harness, itself (its
        siblings too if it may drive them) and the upstreams its policy exposes."""
        fleet = self._fleet
        names = [
            n for n in sorted(fleet.config.harnesses) if sees_siblings(caller) or may_see_harness(caller, n)
        ]
        sessions = [s for s in fleet.sessions if caller.operator or s.identity.harness in names]
        return {
            "pid": os.getpid(),
            "version": __version__,
            "event_loop": loop_name(asyncio.get_running_loop()),
            "upstreams": self._upstream_rows(caller),
            "harnesses": {name: self._harness_state(name)[0] for name in names},
            "sessions": len(sessions),
            "sessions_per_harness": dict(Counter(s.identity.harness or "" for s in sessions)),
            "unapproved_projects": [str(file) for file in fleet.unapproved] if caller.operator else [],
            "call_log": fleet.log_health.status(),
        }

    async def status(self) -> dict[str, Any]:
        """The ``status`` answer as the operator sees it, redacted (for the status page)."""
        return await self.answer("status", {}, OPERATOR)  # type: ignore[no-any-return]

    async def _describe(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """A harness's table, state and sessions; else an upstream's state, breaker and tools (each
        only if the caller may see it)."""
        name = _name(args, "describe")
        fleet = self._fleet
        cfg = fleet.config.harnesses.get(name)
        if cfg is not None and may_see_harness(caller, name):
            state, proc = self._harness_state(name)
            policy = fleet.config.policy_for(name)
            workdir = cfg.workdir or (fleet.config.files[0].parent if fleet.config.files else None)
            return {
                "kind": "harness",
                "name": name,
                "adapter": cfg.harness,
                "argv0": cfg.argv[0],
                "workdir": str(workdir) if workdir else None,
                "model": cfg.model,
                "policy": policy.name if policy else None,
                "exposure": fleet.config.exposure_for(name) if policy else None,
                "mcp_allow": sorted(cfg.mcp_allow),
                "autostart": cfg.autostart,
                "state": state,
                "pid": proc.pid if proc else None,
                "run_id": proc.run_id if proc else None,
                "started": _iso(proc.started) if proc else None,
                "returncode": proc.returncode if proc and not proc.running else None,
                "sessions": [
                    {"session_id": s.session_id, "protocol_version": s.protocol_version or None}
                    for s in fleet.sessions
                    if s.identity.harness == name
                ],
            }
        if not may_see_upstream(caller, name):
            raise self._unknown(name, caller)
        up = fleet.upstreams.get(name)
        config = fleet.config.upstreams.get(name)
        if up is None and config is not None and not config.shared:
            return {
                "kind": "upstream",
                "name": name,
                "shared": False,
                "transport": config.kind,
                "command": config.argv[0] if config.argv else str(config.url),
                **self._unshared_row(name, caller),
            }
        if up is None:
            raise self._unknown(name, caller)
        config = up.config
        return {
            "kind": "upstream",
            "name": name,
            "transport": "stdio" if config.argv else "http",
            "command": config.argv[0] if config.argv else str(config.url),
            "protocol_version": up.protocol_version or None,
            **upstream_row(up),
        }

    async def _logs(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """The last lines of a harness's log (its stdout and stderr), else of an upstream's stderr
        (each only if the caller may see it)."""
        name = _name(args, "logs")
        count = args.get("lines", DEFAULT_LOG_LINES)
        if type(count) is not int or not 1 <= count <= MAX_LOG_LINES:
            raise ValueError(f"logs: lines must be an integer from 1 to {MAX_LOG_LINES}")
        kind, path = self._log_file(name, caller)
        lines = await asyncio.to_thread(tail_lines, path, count)
        return {"name": name, "kind": kind, "path": str(path), "lines": lines}

    def _log_file(self, name: str, caller: Caller) -> tuple[str, Path]:
        """A harness's log, a shared upstream's, or an unshared upstream's instance: ``KEY`` is the
        caller's own instance, ``KEY@HARNESS`` names one; each only if the caller may see it."""
        fleet = self._fleet
        if name in fleet.config.harnesses and may_see_harness(caller, name):
            return "harness", fleet.paths.harness_logs / f"{name}.log"
        if name in fleet.upstreams and may_see_upstream(caller, name):
            return "upstream", fleet.paths.upstream_logs / f"{name}.log"
        if name in fleet.config.upstreams:
            key, harness = name, caller.harness or ""
        else:
            key, _, harness = name.rpartition("@")
        config = fleet.config.upstreams.get(key)
        if config is None or config.shared or not may_see_upstream(caller, key):
            raise self._unknown(name, caller)
        if harness not in fleet.config.harnesses or not may_see_harness(caller, harness):
            raise ValueError(f"logs: {key!r} runs an instance per harness: name one as {key}@HARNESS")
        return "upstream", fleet.paths.upstream_logs / f"{label(key, harness)}.log"

    # ---------------------------------------------------------------- write

    async def _restart(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Restart a harness (stop, spawn with a fresh token) or an upstream (stdin closed, SIGTERM,
        SIGKILL as at shutdown; its restart history forgotten; not counted as a crash)."""
        name = _name(args, "restart")
        fleet = self._fleet
        if name in fleet.config.harnesses:
            spawner = _ready(fleet.spawner)
            async with self._lifecycle[name]:
                await fleet.restart_harness(name)
            proc = spawner.processes.get(name)
            return {"restarted": name, "kind": "harness", "pid": proc.pid if proc else None}
        if not may_see_upstream(caller, name):
            raise self._unknown(name, caller)
        upstream = fleet.upstreams.get(name)
        instances = fleet.unshared.of(name)
        if upstream is None and instances:
            async with self._lifecycle[f"upstream:{name}"]:
                await asyncio.gather(*(up.restart("restart requested") for up in instances.values()))
            return {"restarted": name, "kind": "upstream", "instances": sorted(instances)}
        if upstream is None:
            raise self._unknown(name, caller)
        async with self._lifecycle[f"upstream:{name}"]:
            await upstream.restart("restart requested")
        return {"restarted": name, "kind": "upstream", "pid": upstream.pid or None}

    def _unknown(self, name: str, caller: Caller) -> ValueError:
        """No harness or upstream key ``name`` the caller may see; a project upstream's NAME gets
        its keys (those the caller may see) as a hint."""
        keys = sorted(
            k
            for k, up in self._fleet.config.upstreams.items()
            if up.project and up.name == name and may_see_upstream(caller, k)
        )
        hint = f" (project upstreams go by key: {', '.join(keys)})" if keys else ""
        if caller.operator:
            return ValueError(f"no harness or upstream named {name!r}{hint}")
        return ValueError(unseen(name) + hint)

    def _harness_config(self, name: str, command: str, caller: Caller) -> Any:
        cfg = self._fleet.config.harnesses.get(name)
        if cfg is None:
            hint = (
                f" ({name!r} is an upstream: use `harness restart {name}`)"
                if name in self._fleet.upstreams and may_see_upstream(caller, name)
                else ""
            )
            raise ValueError(f"{command}: no harness named {name!r}{hint}")
        return cfg

    async def _stop(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Stop a running harness; it stays stopped until start, restart or the next daemon start."""
        name = _name(args, "stop")
        self._harness_config(name, "stop", caller)
        spawner = _ready(self._fleet.spawner)
        async with self._lifecycle[name]:
            proc = spawner.processes.get(name)
            state = spawner.state_of(name)
            if proc is None or state not in ("running", "restarting"):
                raise ValueError(f"harness {name!r} is not running ({state})")
            await spawner.stop([name])
        return {"stopped": name, "pid": proc.pid, "returncode": proc.returncode, "was": state}

    async def _start(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Start a harness that is not running, with a fresh token and run id."""
        name = _name(args, "start")
        cfg = self._harness_config(name, "start", caller)
        spawner = _ready(self._fleet.spawner)
        async with self._lifecycle[name]:
            proc = spawner.processes.get(name)
            if proc is not None and proc.running:
                raise ValueError(f"harness {name!r} is already running (pid {proc.pid}); use restart")
            try:
                proc = await spawner.spawn(cfg)
            except OSError as exc:
                raise ValueError(
                    f"harness {name!r}: cannot start {cfg.argv[0]}: {exc.strerror or exc}"
                ) from None
        return {"started": name, "pid": proc.pid, "run_id": proc.run_id}

    # ---------------------------------------------------------------- operator

    async def _reload(self, _args: dict[str, Any], _caller: Caller) -> dict[str, Any]:
        spawner = self._fleet.spawner
        before = {n: p.run_id for n, p in (spawner.processes.items() if spawner else ())}
        result = dict(await self._fleet.reload())
        after = spawner.processes if spawner else {}
        result["harnesses_started"] = sorted(
            n for n, p in after.items() if before.get(n) != p.run_id and p.running
        )
        return result


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _name(args: dict[str, Any], command: str) -> str:
    name = args.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{command} needs a NAME (a harness, or an upstream key)")
    return name


def _ready(spawner: HarnessSpawner | None) -> HarnessSpawner:
    if spawner is None:
        raise ValueError("the daemon is still starting; try again once it printed ready")
    return spawner
