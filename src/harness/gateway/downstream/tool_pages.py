"""A session's ``tools/list`` in pages: a listing longer than :data:`PAGE_BYTES` is answered a page at a
time, each page but the last with a ``nextCursor`` (as the MCP specification's pagination allows), so
no single answer nears the 16 MiB message limit of the bridge or of a client."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.gateway.wire import jsonrpc

PAGE_BYTES = 1 << 20
"""The most bytes of tools one ``tools/list`` answer carries (a single larger tool is a page alone)."""


class StaleCursor(ValueError):
    """A cursor this listing did not give (the list changed since, or it was never ours)."""


@dataclass(frozen=True, slots=True)
class ToolPages:
    """A listing (the JSON array as sent) cut into pages of whole tools; cursors name the listing."""

    listing: bytes
    pages: tuple[bytes, ...]
    tag: str
    """The listing's digest: a cursor of an older listing is refused, never misread."""

    def page(self, cursor: object) -> tuple[bytes, str | None]:
        """The page a cursor (None: the first) names, and the cursor of the next page (or None)."""
        index = 0
        if cursor is not None:
            tag, _, number = str(cursor).partition(":")
            if tag != self.tag or not number.isdigit() or not 0 < int(number) < len(self.pages):
                raise StaleCursor(
                    "invalid cursor: not one this tool list gave (the list may have changed); "
                    "list again without a cursor"
                )
            index = int(number)
        following = f"{self.tag}:{index + 1}" if index + 1 < len(self.pages) else None
        return self.pages[index], following

    def answer(self, request_id: Any, params: Any) -> bytes:
        """The ``tools/list`` answer line for the page ``params.cursor`` names (or why not)."""
        try:
            tools, following = self.page(params.get("cursor") if isinstance(params, dict) else None)
        except StaleCursor as exc:
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, str(exc))
        result: dict[str, Any] = {"tools": []}
        if following is not None:
            result["nextCursor"] = following
        head = jsonrpc.encode({"jsonrpc": "2.0", "id": request_id, "result": result})
        # Splice the pre-encoded tool array in place of the empty one.
        return head.replace(b'"tools":[]', b'"tools":' + tools, 1)


@lru_cache(maxsize=4)
def paged(listing: bytes, limit: int = PAGE_BYTES) -> ToolPages:
    """``listing`` (a JSON array of tools) in pages of at most ``limit`` bytes each; the sessions of
    one policy share a listing, so its pages are made once, not per session."""
    tag = hashlib.sha256(listing).hexdigest()[:12]
    if len(listing) <= limit:
        return ToolPages(listing, (listing,), tag)
    pages: list[bytes] = []
    page: list[bytes] = []
    size = 2
    for tool in json.loads(listing):
        encoded = json.dumps(tool, ensure_ascii=False, separators=(",", ":")).encode()
        if page and size + len(encoded) + 1 > limit:
            pages.append(b"[" + b",".join(page) + b"]")
            page, size = [], 2
        page.append(encoded)
        size += len(encoded) + 1
    pages.append(b"[" + b",".join(page) + b"]")
    return ToolPages(listing, tuple(pages), tag)
