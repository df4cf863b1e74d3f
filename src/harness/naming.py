"""Names agents see: ``<upstream>__<tool>``, kept within what agent CLIs and model APIs accept; and
the keys that tell the daemon's upstreams apart (a project upstream's is ``NAME@PROJECT``)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_EXPOSED_NAME = 50
"""64 (Anthropic/OpenAI tool-name limit) minus Claude Code's ``mcp__harness__`` prefix."""

_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,50}$")
_SHORTENED_SHAPE = re.compile(r"_[0-9a-f]{8}$")
"""How every shortened name ends; a plain name that ends so is shortened too (see :func:`exposed_name`)."""
_INVALID_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_NOT_IN_PROJECT_ID = re.compile(r"[^A-Za-z0-9._-]")
PROJECT_MARK = "@"
"""Joins a project upstream's NAME and its project's id in its key (NAMEs never hold it)."""


def project_id(folder: Path) -> str:
    """A project's id: its folder's name (characters other than ``A-Za-z0-9._-`` as ``_``), ``-``,
    and the first 8 hex digits of sha256 of the folder's path: readable, stable, and distinct for
    two projects whose folders share a name."""
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
    return f"{_NOT_IN_PROJECT_ID.sub('_', folder.name) or 'root'}-{digest}"


def project_key(name: str, folder: Path) -> str:
    """The key of the upstream ``[mcp.NAME]`` of the project file in ``folder``: ``NAME@<project id>``
    (a global upstream's key is its NAME)."""
    return f"{name}{PROJECT_MARK}{project_id(folder)}"


def upstream_name(key: str) -> str:
    """The NAME of an upstream key: the key itself, or a project upstream's key before ``@``."""
    return key.partition(PROJECT_MARK)[0]


def exposed_name(upstream: str, tool: str) -> str:
    """``<upstream>__<tool>``, or, when that is invalid or too long, a shortened form.

    ``upstream`` is a NAME or a key: tools are namespaced by the NAME, so a project upstream's tools
    are named alike in every project.

    Rule: invalid characters become ``_``, the result is cut to 41 characters and ``_`` plus the
    first 8 hex digits of sha256("<upstream>\\0<tool>") are appended. A valid plain name that already
    ends in ``_`` and 8 lowercase hex digits is shortened the same way, so a plain name never equals
    another tool's shortened one (``del_ete_1ec454b0`` beside ``del.ete``). Deterministic,
    ≤ 50 characters, and distinct for distinct real names up to the 32-bit hash (a collision of two
    shortened names is settled per catalogue: :mod:`harness.gateway.upstream.catalogue`).
    """
    upstream = upstream_name(upstream)
    plain = f"{upstream}__{tool}"
    if _VALID_NAME.match(plain) and not _SHORTENED_SHAPE.search(plain):
        return plain
    digest = hashlib.sha256(f"{upstream}\0{tool}".encode()).hexdigest()[:8]
    return f"{_INVALID_CHAR.sub('_', plain)[:41]}_{digest}"


GATEWAY_UPSTREAM = "harness"
"""The upstream key call-log rows give the gateway's own tools (and names no upstream has)."""


def called_name(upstream: str, tool: str) -> str:
    """The name an agent calls for a call-log row's (upstream, tool): ``exposed_name``, or a gateway
    tool's own name (``search_tools``), which is listed unprefixed."""
    return tool if upstream == GATEWAY_UPSTREAM else exposed_name(upstream, tool)
