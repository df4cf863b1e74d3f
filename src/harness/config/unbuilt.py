"""Keys accepted by the model whose behaviour is not built yet: set to anything but the default, refused.

Delete a key's entry here when its feature lands; nothing else needs to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel

from harness.config.errors import ConfigError

NOT_SUPPORTED_YET: Mapping[str, object] = MappingProxyType({})
"""Dotted-key pattern (``*`` stands for a table name) → the only value accepted for now."""


def refuse_unbuilt(file: Path, section: str, name: str | None, table: BaseModel) -> None:
    """Raise ConfigError for the first unbuilt key of ``table`` set to anything but its default.

    ``section`` is ``mcp``, ``mcp_policy`` or ``harness``; ``name`` is None for the ``[mcp]`` settings.
    """
    for pattern, default in NOT_SUPPORTED_YET.items():
        head, _, field = pattern.rpartition(".")
        expected = section if name is None else f"{section}.*"
        if head != expected or getattr(table, field) == default:
            continue
        key = f"{section}.{field}" if name is None else f"{section}.{name}.{field}"
        raise ConfigError(file, key, "not supported yet")
