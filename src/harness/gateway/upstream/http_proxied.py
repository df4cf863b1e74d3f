"""The HTTP client a Streamable HTTP upstream gets: the hand-written one (``http11.py``), or httpx2
when the daemon's environment names a proxy for the URL's scheme (``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY``, either case): httpx2 then applies them and ``NO_PROXY`` exactly as it always did."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.gateway.upstream.http11 import Http11Client, HttpClient, HttpError

if TYPE_CHECKING:
    import httpx2


def http_client(url: str, headers: Mapping[str, str], connect_timeout: float) -> HttpClient:
    """The client for ``url``: httpx2 when a proxy variable applies to its scheme, else ours."""
    if proxy_named(urlsplit(url).scheme.lower()):
        return ProxiedClient(url, headers, connect_timeout)
    return Http11Client(url, headers, connect_timeout)


def proxy_named(scheme: str) -> bool:
    """Whether the environment names a proxy that may apply to a ``scheme`` URL."""
    names = {f"{scheme}_proxy", "all_proxy"}
    return any(value and name.lower() in names for name, value in os.environ.items())


@contextlib.contextmanager
def _as_http_error() -> Iterator[None]:
    """httpx2's errors as :class:`~harness.gateway.upstream.http11.HttpError` (named in its text)."""
    import httpx2  # only a proxied upstream loads it

    try:
        yield
    except httpx2.HTTPError as exc:
        raise HttpError(f"{type(exc).__name__}: {exc}") from exc


class _ProxiedResponse:
    __slots__ = ("_response",)

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    async def read(self) -> bytes:
        with _as_http_error():
            return await self._response.aread()

    async def chunks(self) -> AsyncIterator[bytes]:
        with _as_http_error():
            async for chunk in self._response.aiter_bytes():
                yield chunk


class ProxiedClient:
    """:class:`~harness.gateway.upstream.http11.HttpClient` on httpx2 (proxies from the environment)."""

    def __init__(self, url: str, headers: Mapping[str, str], connect_timeout: float) -> None:
        import httpx2  # only a proxied upstream loads it

        self.url = url
        self._client = httpx2.AsyncClient(
            headers=dict(headers), timeout=httpx2.Timeout(connect_timeout, read=None), follow_redirects=False
        )

    def stream(self, method: str, headers: Mapping[str, str], body: bytes = b"") -> _ProxiedExchange:
        return _ProxiedExchange(self._exchange(method, headers, body))

    @contextlib.asynccontextmanager
    async def _exchange(
        self, method: str, headers: Mapping[str, str], body: bytes
    ) -> AsyncIterator[_ProxiedResponse]:
        with _as_http_error():
            async with self._client.stream(
                method, self.url, content=body or None, headers=dict(headers)
            ) as response:
                yield _ProxiedResponse(response)

    async def aclose(self) -> None:
        await self._client.aclose()


class _ProxiedExchange:
    """:class:`~harness.gateway.upstream.http11.HttpExchange` on httpx2: nothing is sent before it is
    entered, so there is nothing to give up if it never is."""

    __slots__ = ("_exchange",)

    def __init__(self, exchange: AbstractAsyncContextManager[_ProxiedResponse]) -> None:
        self._exchange = exchange

    async def __aenter__(self) -> _ProxiedResponse:
        return await self._exchange.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._exchange.__aexit__(*exc_info)

    def abandon(self) -> None:
        pass
