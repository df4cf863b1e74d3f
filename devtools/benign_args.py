"""A benign corpus of tool arguments, generated from real tool catalogues: each tool's required
properties and about half of its optional ones, with values of the kind agents send for such a
property (paths, queries, URLs, code, SQL, ids, dates, prose). For measuring redaction's false
positives: nothing in it is a secret, so every change redaction makes to it is a false positive."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_PROSE = (
    "Summarize the open issues about the login page and group them by component.",
    "Fix the flaky test in the payment module; it fails when the clock crosses midnight.",
    "Release notes for 2.4: faster search, a new export button, and the keyboard shortcut list.",
    "Meeting with the design team about the onboarding flow, bring the latest mockups.",
    "The build failed on main because the cache key changed after the dependency bump.",
    "Please review the migration: it adds an index on (tenant_id, created_at) and drops a column.",
)
_CODE = (
    "def total(items):\n    return sum(i.price * i.qty for i in items)\n",
    "const user = await db.users.findOne({ where: { email } });\nif (!user) throw new NotFound();",
    "SELECT id, title, created_at FROM issues WHERE state = 'open' ORDER BY created_at DESC LIMIT 20",
    "git log --oneline --since=2.weeks -- src/auth",
    "kubectl get pods -n payments -o wide",
    "mkdir -p build && cmake -S . -B build && cmake --build build -j4",
)
_URLS = (
    "https://docs.python.org/3/library/asyncio.html",
    "https://github.com/acme/shop/pull/128",
    "https://example.com/blog/2026/11/release-notes?utm_source=newsletter",
    "http://localhost:8080/api/v1/orders?page=2",
)
_PATHS = (
    "src/app/main.py",
    "README.md",
    "/home/dev/project/docs/guide.md",
    "tests/test_api.py",
    "C:\\work\\report.xlsx",
)
CREDENTIAL_PROPERTIES = frozenset(
    {"password", "passwd", "passphrase", "secret", "clientsecret", "client_secret", "apikey", "api_key"}
)
"""Properties (lower-cased) that take a credential by name: left out of the benign corpus, since
replacing their value is what redaction is for (:func:`credential_properties` counts them)."""

_WORDS = ("login", "payment", "search", "release", "invoice", "dashboard", "onboarding", "export")


def _value(name: str, schema: Mapping[str, Any], rng: random.Random, depth: int = 0) -> Any:
    kind = schema.get("type")
    lowered = name.lower()
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("integer", "number"):
        return rng.randint(1, 500) if kind == "integer" else round(rng.random() * 100, 2)
    if kind == "array":
        raw_items = schema.get("items")
        items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {"type": "string"}
        return [_value(name, items, rng, depth + 1) for _ in range(rng.randint(1, 3))] if depth < 3 else []
    if kind == "object":
        raw_props = schema.get("properties")
        props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
        return {k: _value(k, v, rng, depth + 1) for k, v in list(props.items())[:4] if isinstance(v, Mapping)}
    return _text(lowered, rng)


def _text(name: str, rng: random.Random) -> str:
    if "url" in name or "link" in name or "href" in name:
        return rng.choice(_URLS)
    if "path" in name or "file" in name or "dir" in name:
        return rng.choice(_PATHS)
    if "email" in name:
        return f"{rng.choice(_WORDS)}.team@example.com"
    if name.endswith(("id", "_ids", "uid")) or "key" in name:
        return rng.choice(
            (
                str(uuid.UUID(int=rng.getrandbits(128))),
                f"ISSUE-{rng.randint(1, 999)}",
                f"{rng.randint(10**6, 10**9)}",
            )
        )
    if "date" in name or "time" in name or "since" in name or "start" in name or "end" in name:
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T09:30:00Z"
    if "query" in name or "search" in name or name in ("q", "text", "prompt"):
        return f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} errors last week"
    if "code" in name or "script" in name or "sql" in name or "command" in name or "body" in name:
        return rng.choice(_CODE)
    if "name" in name or "title" in name or "repo" in name or "owner" in name or "project" in name:
        return f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}"
    return rng.choice(_PROSE)


def benign_arguments(
    catalogs: Mapping[str, Sequence[Mapping[str, Any]]], seed: int = 7
) -> Iterator[dict[str, Any]]:
    """One argument object per tool of every catalogue (required properties plus about half the rest)."""
    rng = random.Random(seed)
    for upstream in sorted(catalogs):
        for tool in catalogs[upstream]:
            schema = tool.get("inputSchema")
            props = schema.get("properties") if isinstance(schema, Mapping) else None
            if not isinstance(props, Mapping) or not props:
                continue
            required = set(schema.get("required") or ()) if isinstance(schema, Mapping) else set()
            chosen = {
                k: v
                for k, v in props.items()
                if isinstance(v, Mapping)
                and k.lower() not in CREDENTIAL_PROPERTIES
                and (k in required or rng.random() < 0.5)
            }
            if chosen:
                yield {k: _value(k, v, rng) for k, v in chosen.items()}


def credential_properties(catalogs: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[tuple[str, str, str]]:
    """(upstream, tool, property) of every property named in :data:`CREDENTIAL_PROPERTIES`."""
    found = []
    for upstream in sorted(catalogs):
        for tool in catalogs[upstream]:
            schema = tool.get("inputSchema")
            props = schema.get("properties") if isinstance(schema, Mapping) else None
            if isinstance(props, Mapping):
                found += [
                    (upstream, str(tool.get("name")), k) for k in props if k.lower() in CREDENTIAL_PROPERTIES
                ]
    return found
