"""What the gateway keeps of an upstream's tools/list (harness.gateway.upstream.catalogue)."""

from __future__ import annotations

from typing import Any

from harness.gateway.upstream.catalogue import MAX_CATALOGUE_BYTES, MAX_TOOLS, check_catalogue
from harness.naming import exposed_name

SCHEMA = {"type": "object"}
COLLIDING = (
    "read_a_very_long_tool_name_for_the_record.10453",
    "read_a_very_long_tool_name_for_the_record.37125",
)
"""Two real names whose shortened exposed names coincide (found by a search of the 32-bit hash)."""


def tool(name: Any, **fields: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": SCHEMA, **fields}


def names(listed: list[Any], version: str = "2025-11-25") -> list[str]:
    return [t["name"] for t in check_catalogue("up", version, listed).tools]


def test_a_plain_name_shaped_like_a_shortened_name_is_shortened_too():
    assert exposed_name("names", "del.ete") == "names__del_ete_1ec454b0"
    assert exposed_name("names", "del_ete_1ec454b0") == "names__del_ete_1ec454b0_f9e153d7"
    assert exposed_name("names", "del_ete_1EC454B0") == "names__del_ete_1EC454B0"


def test_a_tool_without_input_schema_is_mended_to_an_object_schema_and_noted():
    checked = check_catalogue("up", "2025-11-25", [{"name": "bare", "description": "d"}])
    assert checked.tools == [{"name": "bare", "description": "d", "inputSchema": SCHEMA}]
    assert checked.notes == ("""mended tool 'bare': no inputSchema, given {"type": "object"}""",)


def test_tools_an_mcp_client_would_refuse_are_dropped_one_note_each():
    listed = [
        tool("ok"),
        tool("sp ace"),
        tool("x" * 129),
        tool("bell\x07"),
        tool(7),
        "not a tool",
        tool("arr", inputSchema={"type": "array"}),
        tool("desc", description=["x"]),
        tool("ok"),
    ]
    checked = check_catalogue("up", "2025-11-25", listed)
    assert [t["name"] for t in checked.tools] == ["ok"]
    assert len(checked.notes) == len(listed) - 1
    assert "dropped tool 'bell\\x07': the name is not 1-128 characters of A-Za-z0-9_.-" in checked.notes
    assert "dropped tool 'ok': listed twice (the first is kept)" in checked.notes


def test_an_unknown_protocol_version_is_checked_against_the_2025_11_25_schema():
    assert names([tool("ok"), tool("arr", inputSchema={"type": "array"})], version="1999-01-01") == ["ok"]


def test_two_tools_whose_shortened_names_collide_keep_the_first_real_name_whatever_the_order():
    first, second = COLLIDING
    assert exposed_name("up", first) == exposed_name("up", second)
    assert names([tool(first), tool(second)]) == [first]
    assert names([tool(second), tool(first)]) == [first]
    note = check_catalogue("up", "2025-11-25", [tool(second), tool(first)]).notes
    assert note == (f"dropped tool '{second}': its exposed name {exposed_name('up', first)} is '{first}''s",)


def test_tools_listed_past_the_cap_are_dropped_with_one_note():
    checked = check_catalogue("up", "2025-11-25", [tool(f"t{i}") for i in range(MAX_TOOLS + 5)])
    assert len(checked.tools) == MAX_TOOLS
    assert checked.notes == (f"dropped 5 tools listed past the cap of {MAX_TOOLS} per upstream",)


def test_tools_past_the_byte_cap_are_dropped_with_one_note():
    big = "d" * (MAX_CATALOGUE_BYTES // 4)
    checked = check_catalogue("up", "2025-11-25", [tool(f"t{i}", description=big) for i in range(6)])
    assert len(checked.tools) == 3
    assert checked.notes == (
        f"dropped 3 tools listed past the cap of {MAX_CATALOGUE_BYTES:,} bytes per upstream",
    )
