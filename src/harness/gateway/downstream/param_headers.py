"""``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call`` over HTTP (SEP-2243).

A tool may mark input-schema properties with ``x-mcp-header: <Name>``; a client then repeats each
such argument in an ``Mcp-Param-<Name>`` header (plain, or ``=?base64?…?=`` for what a header cannot
hold) so that an intermediary can route on it without reading the body. The gateway is the server
those headers reach, so it checks them against the arguments, as the SDKs do: a header and its
argument are present together and equal, or absent together (``null`` counts as absent). Any
disagreement is ``-32020`` with HTTP 400, the caller's problem to fix, never the upstream's.

Pure functions of the headers (lower-case names, as :mod:`.http_wire` reads them), the tool's input
schema and the arguments; the schema is the one the session's tool view lists for the tool.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

from harness.rules.exposure import ToolView

X_MCP_HEADER: Final = "x-mcp-header"
PREFIX: Final = "Mcp-Param-"
HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
"""The property types a header may mirror (a ``number`` has no portable text form)."""
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP field-name token (RFC 9110 §5.6.2)."""
_DECIMAL: Final = re.compile(r"-?[0-9]+(?:\.0+)?")
"""An integer header value, ``42`` or ``42.0`` (compared as a number)."""


def decode(raw: str | None) -> str | None:
    """A header value as its sender meant it: plain, or the UTF-8 inside ``=?base64?…?=``; None for
    a missing header or a sentinel that is not canonical base64 of UTF-8 (it never matches)."""
    if raw is None or not (raw.startswith("=?base64?") and raw.endswith("?=") and len(raw) >= 11):
        return raw
    payload = raw[9:-2]
    try:
        data = base64.b64decode(payload, validate=True)
        if base64.b64encode(data).decode() != payload:
            return None
        return data.decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


_SUBSCHEMAS: Final = frozenset(
    [
        "items",
        "prefixItems",
        "contains",
        "additionalProperties",
        "propertyNames",
        "contentSchema",
        "unevaluatedProperties",
        "unevaluatedItems",
        "not",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
    ]
)
"""Keywords whose value is a subschema or a list of them (a mark under one is off the chain)."""
_SCHEMA_MAPS: Final = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})
"""Keywords whose value maps names to subschemas."""


def declared(schema: Any) -> list[tuple[tuple[str, ...], str, str]]:
    """(property path, header name, type) of each property marked ``x-mcp-header``. A schema with an
    invalid mark (off a chain of ``properties`` from the root, not a token, on a type a header cannot
    mirror, a name used twice) declares nothing: clients drop such a tool."""
    found: list[tuple[tuple[str, ...], str, str]] = []
    names: set[str] = set()
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        name, kind = node.get(X_MCP_HEADER), node.get("type")
        if name is not None:
            if not (path and isinstance(name, str) and _TOKEN.fullmatch(name) and isinstance(kind, str)):
                return []
            if kind not in HEADER_TYPES or name.lower() in names:
                return []
            names.add(name.lower())
            found.append((path, name, kind))
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                stack.extend(((*path, key) if path is not None else None, sub) for key, sub in value.items())
            elif keyword in _SUBSCHEMAS:
                stack.extend((None, sub) for sub in (value if isinstance(value, list) else [value]))
            elif keyword in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())
    return found


def _argument(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _text(value: Any) -> str | None:
    """How a client writes an argument into its header (None: a value no header can carry)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        return str(value) if isinstance(value, str | int | float) else None
    except ValueError:  # an integer past Python's digit limit for str()
        return None


def _agrees(kind: str, value: Any, text: str, said: str) -> bool:
    """Whether the header's decoded ``said`` is the argument (``text``); an integer property's
    value also compares as a number (``42`` and ``42.0``)."""
    if said == text:
        return True
    if kind != "integer" or isinstance(value, bool) or not _DECIMAL.fullmatch(said):
        return False
    try:
        return bool(int(said.partition(".")[0]) == value)
    except ValueError:
        return False


def mismatch(headers: Mapping[str, str], schema: Any, arguments: Any) -> str | None:
    """Why the ``Mcp-Param-*`` headers disagree with the arguments (None: they agree)."""
    if not isinstance(arguments, Mapping):
        arguments = {}
    for path, name, kind in declared(schema):
        header = PREFIX + name
        raw = headers.get(header.lower())
        value = _argument(arguments, path)
        text = _text(value) if value is not None else None
        argument = ".".join(path)
        if raw is None:
            if text is not None:
                return f"the {header} header is missing; arguments.{argument} is present"
            continue
        if value is None:
            return f"the {header} header is present; arguments.{argument} is absent"
        said = decode(raw)
        if said is None:
            return f"the {header} header is not valid =?base64?…?= (canonical base64 of UTF-8)"
        if text is None or not _agrees(kind, value, text, said):
            return f"the {header} header does not match arguments.{argument}"
    return None


def call_mismatch(headers: Mapping[str, str], message: Mapping[str, Any], view: ToolView) -> str | None:
    """:func:`mismatch` for a ``tools/call`` message, with the schema the view lists for its tool
    (None for any other message, or a name the view does not expose: that call is refused anyway)."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, Mapping):
        return None
    route = view.resolve(name) if isinstance(name := params.get("name"), str) else None
    tool = view.tools.get(route.exposed) if route is not None else None
    if tool is None:
        return None
    return mismatch(headers, tool.get("inputSchema"), params.get("arguments"))
