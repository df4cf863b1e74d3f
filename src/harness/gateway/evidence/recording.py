"""Turning a finished call into a ``ToolCallCompleted`` event and metrics, after the caller has its answer."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from harness.events import Event, ToolCallCompleted
from harness.gateway.evidence.call_metrics import Count, Observations
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.evidence.metrics import CALL_SERIES, tool_label
from harness.gateway.evidence.redaction import args_as_stored, canonical_json, may_hold_secret, redact_text
from harness.gateway.evidence.secret_patterns import REDACTED
from harness.printable import printable
from harness.vocabulary import ArgsMode, Outcome, Tier


def args_hash(arguments: Any, canonical: str | None = None) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of the arguments (interfaces.md); pass
    ``canonical`` when it is already made."""
    text = canonical if canonical is not None else canonical_json(arguments)
    return hashlib.sha256(text.encode()).hexdigest()


def id_text(request_id: Any) -> str | None:
    """A JSON-RPC request id as JSON text (``7``, ``"abc"``); None for anything that is not an id."""
    kind = type(request_id)
    if kind is int:
        return str(request_id)
    if kind is str:
        return orjson.dumps(request_id).decode()
    return None


class RecordingSettings(Protocol):
    """What recording reads from the running configuration."""

    @property
    def args_mode(self) -> ArgsMode:
        """``[mcp] call_log_args``."""
        ...

    @property
    def known(self) -> KnownSecrets:
        """The secret values the daemon holds for upstreams."""
        ...


class Settings(Protocol):
    """Holds the current :class:`RecordingSettings` (replaced on reload)."""

    @property
    def current(self) -> RecordingSettings:
        """The settings now."""
        ...


class _Fixed:
    """Settings that never change (a recorder's without the daemon's configuration holder): its own
    ``current``."""

    def __init__(self, args_mode: ArgsMode) -> None:
        self.args_mode = args_mode
        self.known = KnownSecrets()
        self.current = self


class CallRecorder:
    """Builds call events and updates the call metrics; hands events to ``emit`` without waiting."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        args_mode: ArgsMode = "redacted",
        *,
        settings: Settings | None = None,
    ) -> None:
        """``settings``: where the running configuration's settings are read (the daemon's
        :class:`~harness.gateway.running_config.ConfigHolder`); without it, ``args_mode`` and no
        known secrets, fixed."""
        self._emit = emit
        self._settings: Settings = settings or _Fixed(args_mode)
        self._metric_children: dict[tuple[str, str, str, str], tuple[Count, Observations, Observations]] = {}

    def _children(
        self, harness: str, upstream: str, tool: str, outcome: str
    ) -> tuple[Count, Observations, Observations]:
        """The counter and histogram children for these labels: one lookup for a tool seen before.
        The cache is keyed by the tool's name only while that name is its own label (under the
        per-upstream cap), so made-up tool names, which share ``__other__``, cannot grow it."""
        key = (harness, upstream, tool, outcome)
        found = self._metric_children.get(key)
        if found is None:
            label = tool_label(upstream, tool)
            found = CALL_SERIES.children(harness, upstream, label, outcome)
            if label == tool:
                self._metric_children[key] = found
        return found

    def stored_text(self, text: str, limit: int = 1000) -> str | None:
        """Free text an agent sent to a gateway tool (a search query), as ``call_log_args`` allows
        it to be stored: redacted and capped under ``redacted``, else not at all."""
        settings = self._settings.current
        if settings.args_mode != "redacted":
            return None
        known = settings.known
        if known.found_in(text):
            text = known.redact(text, REDACTED)
        return redact_text(text)[:limit] if may_hold_secret(text) else text[:limit]

    def stored_name(self, name: str, limit: int = 200) -> str:
        """A tool name an agent sent that no catalogue vouches for (a denied call's), as stored in
        every ``call_log_args`` mode: held secrets and secret-looking text redacted, control and
        bidi characters dropped, at most ``limit`` characters."""
        known = self._settings.current.known
        if known.found_in(name):
            name = known.redact(name, REDACTED)
        if may_hold_secret(name):  # each part on its own: `up__ghp_…` has no word boundary at `ghp_`
            name = "__".join(redact_text(part) for part in name.split("__"))
        return printable(name)[:limit]

    def record(
        self,
        *,
        session: Any,
        upstream: str,
        tool: str,
        tier: Tier,
        arguments: Any,
        outcome: Outcome,
        reason: str | None,
        started: float,
        response_bytes: int,
        span_id: str,
        exposed: str,
        via_call_tool: bool = False,
        request_id: Any = None,
    ) -> None:
        """Record one finished call. ``started`` is a ``time.perf_counter()`` reading; ``exposed``
        the name the agent called (as its session lists it), ``request_id`` its JSON-RPC id."""
        now_perf = time.perf_counter()
        latency_s = now_perf - started
        if outcome == "denied":
            tool, exposed = self.stored_name(tool), self.stored_name(exposed)
        ident = session.identity
        who = ident.attribution
        settings = self._settings.current
        mode = settings.args_mode
        stored_hash = stored_args = size = None
        truncated = False
        if mode != "none":
            canonical = canonical_json(arguments)
            raw = canonical.encode()
            stored_hash, size = hashlib.sha256(raw).hexdigest(), len(raw)
            if mode == "redacted":
                stored_args, truncated = args_as_stored(arguments, canonical, settings.known)
        # Every field, in declaration order, of the type declared: the gateway computed each one, so
        # the event skips validation (``Event.trusted``; the recording tests compare it with a
        # validated event byte for byte).
        event = ToolCallCompleted.trusted(
            {
                "ts": time.time() - latency_s,
                "session_id": session.session_id,
                "latency_ms": round(latency_s * 1000, 3),
                "harness": who.harness,
                "run_id": who.run_id,
                "adapter": who.adapter,
                "model": who.model,
                "config_hash": who.config_hash,
                "upstream": upstream,
                "tool": tool,
                "tier": tier,
                "args_hash": stored_hash,
                "args": stored_args,
                "args_truncated": truncated,
                "args_bytes": size,
                "outcome": outcome,
                "error_reason": reason,
                "response_bytes": response_bytes,
                "response_tokens_est": (response_bytes + 3) // 4,
                "trace_id": ident.trace_id,
                "span_id": span_id,
                "exposed_name": exposed,
                "via_call_tool": via_call_tool,
                "request_id": id_text(request_id),
            }
        )
        self._emit(event)
        calls, duration, sizes = self._children(who.harness or "", upstream, tool, outcome)
        calls.value += 1
        duration.observe(latency_s)
        sizes.observe(response_bytes)
