"""The daemon's loopback TCP listeners, ``[mcp] listen`` (the HTTP endpoint) and ``[mcp]
metrics_listen`` (``/metrics`` and the status page): started, moved or stopped as the settings say.

A listener that cannot bind is a failure named by its setting and address (``[mcp] listen
127.0.0.1:8765: address already in use``): at start the daemon exits 1 with that line rather than
print ``ready`` without it; a reload reports it in its answer and applies the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from harness.config.model import McpSettings, loopback_address
from harness.gateway.downstream.http_door import HttpDoor
from harness.gateway.downstream.http_endpoint import HttpEndpoint
from harness.gateway.downstream.http_session import SessionFactory
from harness.gateway.evidence.metrics import MetricsListener
from harness.rules.routing import Identity


class ListenerError(Exception):
    """A listener the daemon cannot start; the message is one line per failure."""


def failure(key: str, address: str, exc: OSError) -> str:
    """One line naming the setting, the address and why it cannot listen."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)  # asyncio's own text repeats the address
    return f"[mcp] {key} {address}: {reason[:1].lower()}{reason[1:]}"


def must_listen(failures: list[str]) -> None:
    """At start: a listener that failed stops the daemon (:class:`ListenerError`)."""
    if failures:
        raise ListenerError("; ".join(failures))


class Listeners:
    """The HTTP endpoint and the metrics listener of one daemon."""

    def __init__(
        self,
        metrics: MetricsListener,
        new_session: SessionFactory,
        identities: Callable[[], Mapping[str, Identity]],
        harness_pids: Callable[[], Mapping[int, str]],
    ) -> None:
        self.metrics = metrics
        self.http: HttpEndpoint | None = None
        self._new_session = new_session
        self._identities = identities
        self._harness_pids = harness_pids

    def serve_metrics(self, settings: McpSettings) -> list[str]:
        """Serve ``metrics_listen`` (moving or stopping the listener); the failures."""
        listen = settings.metrics_listen
        try:
            self.metrics.serve(loopback_address(listen) if listen else None)
        except OSError as exc:
            return [failure("metrics_listen", listen, exc)]
        return []

    async def serve_http(self, settings: McpSettings) -> list[str]:
        """Serve ``listen`` (starting, moving or stopping the endpoint); the failures."""
        listen = settings.listen
        allow = settings.listen_unidentified_peers == "allow"
        current = self.http
        if current is not None and listen and (current.host, current.port) == loopback_address(listen):
            current.door.allow_unidentified = allow
            return []
        if current is not None:
            self.http = None
            await current.close()
        if not listen:
            return []
        host, port = loopback_address(listen)
        door = HttpDoor(self._identities, self._harness_pids, allow_unidentified=allow)
        endpoint = HttpEndpoint(host, port, self._new_session, self._identities, door)
        try:
            await endpoint.start()
        except OSError as exc:
            return [failure("listen", listen, exc)]
        self.http = endpoint
        return []

    async def close_http(self) -> None:
        """Stop the HTTP endpoint (its sessions and connections end)."""
        if self.http is not None:
            await self.http.close()
            self.http = None
