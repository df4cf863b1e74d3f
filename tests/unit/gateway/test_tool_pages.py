"""A session's tools/list in pages (harness.gateway.downstream.tool_pages)."""

from __future__ import annotations

import json

import pytest

from harness.gateway.downstream.tool_pages import StaleCursor, paged


def listing(count: int, pad: int = 100) -> bytes:
    tools = [
        {"name": f"t{i}", "description": "d" * pad, "inputSchema": {"type": "object"}} for i in range(count)
    ]
    return json.dumps(tools, separators=(",", ":")).encode()


def test_a_short_listing_is_one_page_with_no_next_cursor():
    whole = listing(3)
    assert paged(whole).page(None) == (whole, None)


def test_a_long_listing_is_paged_within_the_limit_and_the_pages_hold_every_tool_in_order():
    whole, names = listing(100), []
    pages, cursor = paged(whole, limit=2000), None
    while True:
        page, cursor = pages.page(cursor)
        assert len(page) <= 2000
        names += [t["name"] for t in json.loads(page)]
        if cursor is None:
            break
    assert names == [f"t{i}" for i in range(100)]


def test_a_cursor_of_another_listing_or_a_made_up_one_is_refused():
    old, new = paged(listing(100), limit=2000), paged(listing(101), limit=2000)
    _page, cursor = old.page(None)
    for bad in (cursor, "garbage", f"{new.tag}:0", f"{new.tag}:999", f"{new.tag}:-1", 7):
        with pytest.raises(StaleCursor, match="list again without a cursor"):
            new.page(bad)
