"""A downstream session reached over the loopback HTTP endpoint: what the session sends goes to the
response stream of the POST it answers (or whose progress token it carries), else to the session's
GET stream."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.gateway.downstream import modern_era
from harness.gateway.downstream.http_lines import Lines
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import request_ids

SessionFactory = Callable[[str, Callable[[bytes], None], bool], DownstreamSession]
"""Opens a downstream session for a token with a ``send`` callback, in the handshake era or (True)
the 2026-07-28 era (the daemon's ``http_session``)."""


@dataclass(eq=False)
class Exchange:
    """One POST's answer: the requests it carried, their progress tokens, what goes back."""

    ids: set[Any]
    tokens: set[Any]
    lines: Lines = field(default_factory=Lines)
    notified: bool = False
    """A notification was routed here (the answer must be a stream, not one JSON body)."""
    reply: Callable[[list[bytes]], None] | None = None
    """Writes the one JSON body, in place, once every answer is there and nothing else came first:
    before the work that follows an answer (recording the call), as the bridge's write is."""
    replied: bool = False

    def put(self, line: bytes, *, answer_to: Any = None) -> None:
        self.lines.put(line)
        if answer_to is None:
            self.notified = True
        else:
            self.ids.discard(answer_to)
            if not self.ids:
                self.answered()

    def answered(self) -> None:
        """Every request is answered: the JSON body goes out now if one is awaited; the lines end."""
        if self.reply is not None and not self.notified and not self.replied:
            self.replied = True
            self.reply(self.lines.answers())
        self.lines.put(None)


class HttpSession:
    """A downstream session reached over HTTP: routes what the session sends to the POST stream of
    the request it answers (or whose progress token it carries), else to the GET stream."""

    def __init__(self, token: str, new_session: SessionFactory, modern: bool = False) -> None:
        self.id = secrets.token_urlsafe(24)
        self.token = token
        self.last_used = time.monotonic()
        self._by_id: dict[Any, Exchange] = {}
        self._by_token: dict[Any, Exchange] = {}
        self.current: Exchange | None = None
        """The exchange whose messages the session is handling right now (synchronous answers)."""
        self.standalone: Lines | None = None
        self.session = new_session(token, self.send, modern)
        self.session.features.send_related = self.send_related
        self.session.answers_batches = False  # each POST's exchange assembles its batch's answer

    def open_exchange(self, messages: list[Any]) -> Exchange:
        """An exchange for the requests among ``messages``, registered before the session sees them."""
        ids = request_ids(messages)
        tokens: set[Any] = set()
        for m in messages:
            if isinstance(m, dict) and jsonrpc.is_id(m.get("id")) and m["id"] in ids:
                meta = m.get("params", {}).get("_meta") if isinstance(m.get("params"), dict) else None
                if isinstance(meta, dict) and jsonrpc.is_id(meta.get("progressToken")):
                    tokens.add(meta["progressToken"])
        exchange = Exchange(ids, tokens)
        for request_id in ids:
            self._by_id.setdefault(request_id, exchange)  # an id in flight keeps its exchange
        for token in tokens:
            self._by_token.setdefault(token, exchange)
        return exchange

    @property
    def busy(self) -> bool:
        """A request of this session is still being answered (a listen stream stays open)."""
        return bool(self._by_id)

    def close_exchange(self, exchange: Exchange) -> None:
        """Forget an exchange (answered, or its client went away)."""
        for table in (self._by_id, self._by_token):
            for key in [k for k, v in table.items() if v is exchange]:
                del table[key]

    def send(self, line: bytes) -> None:
        """The session's output: to the exchange it belongs to, else the GET stream, else dropped."""
        try:
            message = json.loads(line)
        except ValueError:
            return
        request_id = message.get("id") if isinstance(message, dict) else None
        if not jsonrpc.is_id(request_id):
            request_id = None
        is_answer = isinstance(message, dict) and "method" not in message
        current = self.current
        if is_answer and current is not None and (request_id is None or request_id in current.ids):
            current.put(line, answer_to=request_id if request_id in current.ids else None)
            if request_id is not None and self._by_id.get(request_id) is current:
                del self._by_id[request_id]
            return
        if is_answer and (exchange := self._by_id.pop(request_id, None)) is not None:
            exchange.put(line, answer_to=request_id)
            return
        params = message.get("params") if isinstance(message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        listen_id = meta.get(modern_era.SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        if listen_id is not None and (exchange := self._by_id.get(listen_id)) is not None:
            exchange.put(line)  # a 2026-07-28 listen stream is its request's response stream
            return
        if isinstance(message, dict) and message.get("method") == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            if (exchange := self._by_token.get(token)) is not None:
                exchange.put(line)
                return
        if self.standalone is not None:
            self.standalone.put(line)

    def send_related(self, line: bytes, request_id: Any) -> None:
        """A request to the agent made for one of its requests (an elicitation during a call): on that
        request's response stream, as the spec asks, else the GET stream."""
        exchange = self._by_id.get(request_id)
        if exchange is not None:
            exchange.put(line)
        else:
            self.send(line)

    def end(self, reason: str) -> None:
        """End the session: its streams close."""
        self.session.close(reason)
        if self.standalone is not None:
            self.standalone.put(None)
        for exchange in {*self._by_id.values(), *self._by_token.values()}:
            exchange.lines.put(None)
