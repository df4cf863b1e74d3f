"""The cache keys of a 2026-07-28 answer (``ttlMs``, ``cacheScope``) are the gateway's own: what a
harness may list or read follows its policy, so an answer is never ``public``, whatever an upstream
said (tests/acceptance/test_http_param_headers.py reads resources through a real daemon)."""

from __future__ import annotations

import json
from typing import Any

from harness.gateway.downstream.modern_era import CACHEABLE_METHODS, ModernWire
from harness.gateway.wire import jsonrpc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"a key sent twice: {keys}"
    return dict(pairs)


def test_a_cacheable_answer_is_private_with_no_freshness_whatever_the_upstream_said():
    sent: list[bytes] = []
    wire = ModernWire(sent.append)
    wire.cacheable.update({1, 2, 3, 4})
    public = {"contents": [{"uri": "note://a", "text": "a"}], "ttlMs": 60000, "cacheScope": "public"}
    wire.send(jsonrpc.result(1, public))  # the gateway's key order (the spliced path)
    wire.send(jsonrpc.result(2, {"ttlMs": 5, "contents": []}))
    wire.send(b'{"result":{"cacheScope":"public","contents":[]},"id":3,"jsonrpc":"2.0"}\n')
    wire.send(jsonrpc.result(4, {"contents": []}))
    answers = [json.loads(line, object_pairs_hook=_unique_keys) for line in sent]
    for answer in answers:
        result = answer["result"]
        assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 0, "private")
    assert answers[0]["result"]["contents"] == public["contents"]
    assert not wire.cacheable


def test_resource_reads_are_cacheable_as_lists_are():
    assert {"resources/read", "resources/list", "resources/templates/list", "tools/list"} <= CACHEABLE_METHODS
