"""A JSON-RPC batch's answer: one array with an entry per member that is not a notification or the
agent's own response (a batch of only those gets no answer). The HTTP endpoint and the line
transports (stdio through the bridge) both build it from what is here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.gateway.wire.jsonrpc import is_id


def _is_request(member: Any) -> bool:
    return isinstance(member, dict) and isinstance(member.get("method"), str) and "id" in member


def _is_answer(member: Any) -> bool:
    """A notification or the agent's response to a request of ours: no entry in the answer."""
    if not isinstance(member, dict):
        return False
    if isinstance(member.get("method"), str):
        return "id" not in member
    return "result" in member or "error" in member


def request_ids(messages: Iterable[Any]) -> set[Any]:
    """The valid ids of the requests among ``messages`` (what their answers are matched by)."""
    return {m["id"] for m in messages if _is_request(m) and is_id(m["id"])}


def entries_expected(messages: Iterable[Any]) -> int:
    """How many entries the batch's answer holds: one per member that is not a notification or a
    response (a request, or something invalid, which is answered with an error)."""
    return sum(1 for m in messages if not _is_answer(m))


def json_array(lines: Iterable[bytes]) -> bytes:
    """Answer lines as one JSON array (no newline)."""
    return b"[" + b",".join(line.rstrip(b"\n") for line in lines) + b"]"


@dataclass(eq=False)
class _Batch:
    expected: int
    ids: set[Any]
    lines: list[bytes] = field(default_factory=list)


class BatchReplies:
    """A line transport's open batches: each answer to one of a batch's requests is held until the
    batch is complete, then the batch goes out as one array line; anything else passes through.

    Answers without a known id (an invalid member's error) belong to the batch being handled."""

    def __init__(self, send: Callable[[bytes], None], idle: Callable[[], None]) -> None:
        self._send = send
        self._idle = idle
        self._by_id: dict[Any, _Batch] = {}
        self._current: _Batch | None = None

    def begin(self, messages: list[Any]) -> None:
        """A batch is about to be handled (its answers are routed here from now on)."""
        batch = _Batch(entries_expected(messages), request_ids(messages))
        for request_id in batch.ids:
            self._by_id.setdefault(request_id, batch)  # an id already in flight keeps its batch
        self._current = batch

    def handled(self) -> None:
        """The batch begun last was handled (its synchronous answers are in)."""
        batch, self._current = self._current, None
        if batch is not None:
            self._finish_if_complete(batch)

    def route(self, line: bytes) -> None:
        """The session's output while batches are open."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            message = None
        if isinstance(message, dict) and "method" not in message:
            request_id = message.get("id")
            batch = self._by_id.get(request_id) if is_id(request_id) else None
            batch = batch or self._current
            if batch is not None:
                batch.lines.append(line)
                self._finish_if_complete(batch)
                return
        self._send(line)

    def _finish_if_complete(self, batch: _Batch) -> None:
        if batch is self._current or len(batch.lines) < batch.expected:
            return
        for request_id in batch.ids:
            if self._by_id.get(request_id) is batch:
                del self._by_id[request_id]
        if batch.lines:
            self._send(json_array(batch.lines) + b"\n")
        if not self._by_id and self._current is None:
            self._idle()
