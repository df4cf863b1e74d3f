"""``prompts/list``, ``prompts/get`` and ``completion/complete`` for a session: the side-loaded
prompts (``harness__<name>``) and the prompts of the upstreams its policy exposes, each named
``<upstream>__<prompt>`` by the tools' naming rule (:func:`harness.naming.exposed_name`).

A list asks every exposed upstream that declared ``prompts`` at its handshake, all pages, at the
time of asking; an upstream that is down or fails is left out of that answer. A get or a completion
goes to the one upstream its name belongs to, with the upstream's own name, and the upstream's reply
(result or error) comes back unchanged. The policy's ``tools`` and ``deny`` globs apply to these
names as to tools: a prompt they leave out is neither listed nor got nor completed (it answers as
unknown). Completion of a resource reference (``ref/resource``) is not proxied. None of these is a
tool call: they make no call-log row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from harness.gateway.downstream.resource_proxy import Reading, same_link
from harness.gateway.library.prompts import PROMPT_PREFIX, PromptError, PromptLibrary
from harness.gateway.upstream.link import UpstreamLink, list_all
from harness.gateway.wire import jsonrpc
from harness.naming import exposed_name

log = logging.getLogger(__name__)

LIST_TIMEOUT_S = 10.0


def _serving(links: Callable[[str], UpstreamLink | None], server: str) -> UpstreamLink | None:
    link = links(server)
    return link if link is not None and link.serves("prompts") else None


async def _upstream_prompts(link: UpstreamLink) -> list[dict[str, Any]]:
    prompts = await list_all(link, "prompts/list", "prompts", LIST_TIMEOUT_S)
    return [p for p in prompts if isinstance(p.get("name"), str)]


async def list_prompts(
    library: PromptLibrary,
    servers: Sequence[str],
    links: Callable[[str], UpstreamLink | None],
    allowed: Callable[[str], bool] = lambda _name: True,
) -> dict[str, Any]:
    """The merged ``prompts/list`` result (an upstream's prompts whose exposed name ``allowed``
    refuses are left out)."""
    serving = [(s, link) for s in servers if (link := _serving(links, s)) is not None]
    found = await asyncio.gather(*(_upstream_prompts(link) for _s, link in serving), return_exceptions=True)
    prompts = library.listed()
    for (server, _link), result in zip(serving, found, strict=True):
        if isinstance(result, BaseException):
            log.warning("upstream %s: prompts/list failed: %s", server, result)
            continue
        named = ({**p, "name": exposed_name(server, p["name"])} for p in result)
        prompts += [p for p in named if allowed(p["name"])]
    return {"prompts": prompts}


async def _resolve(
    name: str, servers: Sequence[str], links: Callable[[str], UpstreamLink | None]
) -> tuple[UpstreamLink, str] | None:
    """The upstream and its own name for an exposed prompt name (None: no such prompt here)."""
    server, sep, rest = name.partition("__")
    if not sep or server not in servers or (link := _serving(links, server)) is None:
        return None
    if exposed_name(server, rest) == name:
        return link, rest
    for prompt in await _upstream_prompts(link):  # a shortened name: find whose it is
        if exposed_name(server, prompt["name"]) == name:
            return link, prompt["name"]
    return None


async def answer(
    request_id: Any,
    method: str,
    params: Any,
    library: PromptLibrary,
    servers: Sequence[str],
    links: Callable[[str], UpstreamLink | None],
    allowed: Callable[[str], bool] = lambda _name: True,
    reading: Reading = same_link,
) -> bytes:
    """The answer line to one ``prompts/*`` or ``completion/complete`` request (a prompt whose
    exposed name ``allowed`` refuses is answered as unknown; a get goes where ``reading`` says)."""
    params = params if isinstance(params, dict) else {}
    if method == "prompts/list":
        return jsonrpc.result(request_id, await list_prompts(library, servers, links, allowed))
    if method == "prompts/get":
        name = params.get("name")
        if isinstance(name, str) and name.startswith(PROMPT_PREFIX):
            try:
                return jsonrpc.result(request_id, library.get(name, params.get("arguments")))
            except PromptError as exc:
                return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, str(exc))
        forward = dict(params)
    else:  # completion/complete
        ref = params.get("ref")
        if not isinstance(ref, dict) or ref.get("type") != "ref/prompt":
            detail = "completion is proxied for prompt arguments (ref/prompt) only"
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, detail)
        name = ref.get("name")
        forward = dict(params)
    found = await _resolve(name, servers, links) if isinstance(name, str) and allowed(name) else None
    if found is None:
        return jsonrpc.error(
            request_id, jsonrpc.INVALID_PARAMS, f"no prompt named {name!r}; prompts/list shows them"
        )
    link, own_name = found
    if method == "prompts/get":
        forward["name"] = own_name
        link = await reading(name.partition("__")[0], link)
    else:
        forward["ref"] = {**params["ref"], "name": own_name}
    try:
        reply = await link.ask(method, forward, link.config.timeout)
    except TimeoutError:
        return jsonrpc.error(
            request_id, jsonrpc.INTERNAL_ERROR, f"upstream {link.name!r} did not answer {method}"
        )
    return jsonrpc.relayed(request_id, reply)
