"""The gateway's own tools behind an MCP session: the control-plane facade (``harness_list`` …
``harness_restart``, delegating to the same handlers as the CLI), the trajectory tools over the call
log, the skill tools and side-loaded prompts.

Each answers only within what the caller may see (:mod:`harness.rules.scope`): the control plane
scopes the facade's commands; the trajectory tools read only the caller's own harness's calls. A
session with no harness identity gets none of them.

None of this is on the per-call hot path: a session hands these calls here as tasks on the loop;
store reads run on the store reader's thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

from harness.config import Config, parse_duration
from harness.gateway.library.prompts import PromptLibrary
from harness.gateway.library.skills import SkillLibrary
from harness.rules.access import Caller, Exposed, NotPermitted, session_caller
from harness.rules.gateway_tools import (
    FACADE_COMMANDS,
    FACADE_READ_TOOLS,
    FACADE_WRITE_TOOLS,
    GET_SKILL,
    HARNESS_FAILURES,
    HARNESS_RUN_CALLS,
    HARNESS_TOOLS,
    SEARCH_SKILLS,
    SKILL_TOOLS,
)
from harness.rules.routing import Identity
from harness.rules.scope import unseen

CALL_FIELDS = (
    "ts",
    "harness",
    "run_id",
    "session_id",
    "upstream",
    "tool",
    "tier",
    "outcome",
    "error_reason",
    "latency_ms",
    "response_bytes",
)
"""What a trajectory tool shows of each call-log row (arguments stay in the store)."""

_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    str(t["name"]): t["inputSchema"] for t in (*FACADE_READ_TOOLS, *FACADE_WRITE_TOOLS, *SKILL_TOOLS)
}


class Control(Protocol):
    """The control plane's entry point (:meth:`harness.gateway.control_plane.ControlPlane.answer`)."""

    async def answer(self, command: str, args: dict[str, Any], caller: Caller) -> Any:
        """Run one command with the caller's rights."""
        ...


class CallLog(Protocol):
    """Call-log reads off the loop (:meth:`harness.gateway.store_reader.StoreReader.calls`)."""

    async def calls(self, **filters: Any) -> list[dict[str, Any]]:
        """Rows as :meth:`harness.reading.StoreView.calls` returns them."""
        ...


def checked_arguments(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against the tool's input schema (known keys, required ones, string or
    bounded integer values), with defaults filled in; ValueError saying what is wrong."""
    schema = _SCHEMAS[tool]
    properties: Mapping[str, Any] = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        raise ValueError(f"{tool}: unknown argument {unknown[0]!r} (it takes {takes})")
    out: dict[str, Any] = {}
    for key, spec in properties.items():
        value = arguments.get(key, spec.get("default"))
        if value is None:
            if key in schema.get("required", ()):
                raise ValueError(f"{tool}: argument {key!r} is required")
            continue
        if spec["type"] == "string" and not (isinstance(value, str) and value):
            raise ValueError(f"{tool}: argument {key!r} must be a non-empty string")
        if spec["type"] == "integer" and (
            type(value) is not int or not spec["minimum"] <= value <= spec["maximum"]
        ):
            raise ValueError(
                f"{tool}: {key!r} must be an integer from {spec['minimum']} to {spec['maximum']}"
            )
        out[key] = value
    return out


def read_libraries(config: Config) -> tuple[SkillLibrary, PromptLibrary]:
    """The skills and prompts of the configured folders (blocking file reads: call off the loop)."""
    return SkillLibrary(config.mcp.skill_paths), PromptLibrary(config.mcp.prompt_paths)


class GatewayTools:
    """Answers the gateway's own tools and prompts for every session (one per daemon)."""

    def __init__(
        self,
        libraries: tuple[SkillLibrary, PromptLibrary],
        control: Control,
        call_log: CallLog,
        exposed: Exposed,
    ) -> None:
        self._control = control
        self._call_log = call_log
        self._exposed = exposed
        self.skills, self.prompts = libraries

    def use(self, libraries: tuple[SkillLibrary, PromptLibrary]) -> None:
        """Serve newly read libraries (on the loop; the old skill index is freed)."""
        old = self.skills
        self.skills, self.prompts = libraries
        old.close()

    async def call(self, name: str, arguments: Mapping[str, Any], identity: Identity) -> dict[str, Any]:
        """The structured result of one gateway tool call. ValueError: the call failed (a tool error
        the agent can fix); :class:`~harness.rules.access.NotPermitted`: the tier refuses it, or the
        session has no harness identity."""
        if name in HARNESS_TOOLS and identity.harness is None:
            raise NotPermitted(f"not_permitted: `{name}`: this session has no harness identity")
        args = checked_arguments(name, arguments)
        command = FACADE_COMMANDS.get(name)
        if command is not None:
            result = await self._control.answer(command, args, session_caller(identity, self._exposed))
            return result if isinstance(result, dict) else {"harnesses": result}
        if name == HARNESS_RUN_CALLS:
            return await self._run_calls(args, identity)
        if name == HARNESS_FAILURES:
            return await self._failures(args, identity)
        if name == SEARCH_SKILLS:
            found = self.skills.search(args["query"], args["k"])
            return {"skills": [{"name": s.name, "description": s.description} for s in found]}
        if name == GET_SKILL:
            skill = self.skills.skills.get(args["name"])
            if skill is None:
                raise ValueError(
                    f"no skill named {args['name']!r}; search_skills finds skills by what they do"
                )
            return {
                "name": skill.name,
                "description": skill.description,
                "folder": str(skill.folder),
                "body": skill.body,
            }
        raise ValueError(f"{name} is not a gateway tool")

    async def _run_calls(self, args: dict[str, Any], identity: Identity) -> dict[str, Any]:
        """A run's calls, if it is a run of the caller's harness (another's answers as no calls)."""
        run_id = args.get("run_id") or identity.run_id
        if run_id is None:
            raise ValueError("harness_run_calls: give run_id (this session belongs to no run)")
        rows = await self._call_log.calls(run_id=run_id, harness=identity.harness, limit=args["limit"])
        return {"run_id": run_id, "calls": [{k: row[k] for k in CALL_FIELDS} for row in rows]}

    async def _failures(self, args: dict[str, Any], identity: Identity) -> dict[str, Any]:
        """The caller's own harness's failed calls (another harness answers as unknown)."""
        harness: str = args.get("harness") or identity.harness or ""
        if harness != identity.harness:
            raise ValueError(f"harness_recent_failures: {unseen(harness)}")
        try:
            since = time.time() - parse_duration(args["since"])
        except ValueError as exc:
            raise ValueError(f"harness_recent_failures: since: {exc}") from None
        rows = await self._call_log.calls(harness=harness, since=since, failed=True, limit=args["limit"])
        return {"harness": harness, "calls": [{k: row[k] for k in CALL_FIELDS} for row in rows]}
