"""``config_hash``: the fingerprint of a harness's effective configuration, recorded on each run."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.config.model import Config


def effective_tables(config: Config, harness: str) -> dict[str, Any]:
    """The JSON object hashed for ``harness``: its table, its policy, the upstream tables it can reach
    by key (a project upstream's key names its project, so its table leaves ``project`` out, as every
    table does: configurations without projects hash as they always did).

    Secrets stay unresolved (``${NAME}`` as written); paths are strings; KeyError if unknown.
    """
    entry = config.harnesses[harness]
    policy = config.policy_for(harness)
    servers = policy.servers if policy is not None else ()
    project = config.project_of(harness)
    reached = [u for name in servers if (u := config.upstream_for(name, project)) is not None]
    return {
        "harness": entry.model_dump(mode="json"),
        "policy": policy.model_dump(mode="json") if policy is not None else None,
        "upstreams": {u.key: u.model_dump(mode="json", exclude={"project"}) for u in reached},
    }


def config_hash(config: Config, harness: str) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of :func:`effective_tables`."""
    tables = effective_tables(config, harness)
    text = json.dumps(tables, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
