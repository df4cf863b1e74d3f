"""`harness tools` and `policy what-if`: schema bytes per exposure mode."""

from __future__ import annotations

from harness.cli.tools import bytes_per_mode, mode_views
from harness.config import load_config

CONFIG = """
[mcp.git]
argv = ["mcp-server-git"]
[mcp_policy.dev]
servers = ["git"]
max_description_chars = 40
[harness.coder]
argv = ["agent"]
mcp_policy = "dev"
mcp_allow = ["read", "write"]
"""


def tool(name: str, description: str) -> dict[str, object]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


def test_full_untrimmed_counts_the_same_tools_as_full_so_it_is_never_smaller(tmp_path):
    file = tmp_path / "harness.toml"
    file.write_text(CONFIG)
    config = load_config(file)
    policy = config.policies["dev"]
    short = {"git": [tool("git_status", "Shows the status.")]}
    views = mode_views(policy, config, short, read_only=False)
    assert views["full"].gateway, "the facade tools are listed in full mode"
    sizes = bytes_per_mode(views, ())
    assert sizes["full_untrimmed"] == sizes["full"]  # nothing to trim: the same listing
    long = {"git": [tool("git_log", "Shows the commit log. " + "It has many words. " * 20)]}
    sizes = bytes_per_mode(mode_views(policy, config, long, read_only=False), ())
    assert sizes["full_untrimmed"] > sizes["full"]
