"""What a policy exposes: namespaced names, the shortening rule, tiers, globs."""

from __future__ import annotations

import re

from harness.actors.tool_views import build_view, tier_of
from harness.naming import MAX_EXPOSED_NAME, exposed_name
from harness.config import Config, PolicyConfig, UpstreamConfig

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,50}$")


def upstream(name: str = "gitea", **kw) -> UpstreamConfig:
    return UpstreamConfig(name=name, argv=("x",), **kw)


def test_a_short_valid_name_is_upstream_double_underscore_tool():
    assert exposed_name("gitea", "create_issue") == "gitea__create_issue"


def test_a_long_name_is_shortened_deterministically_within_50_characters():
    long_tool = "t" * 60
    name = exposed_name("a-twenty-char-upstrm", long_tool)
    assert len(name) <= MAX_EXPOSED_NAME and NAME_RE.match(name)
    assert name == exposed_name("a-twenty-char-upstrm", long_tool)
    assert name != exposed_name("a-twenty-char-upstrm", long_tool + "x")


def test_a_name_with_characters_agents_reject_is_made_valid_and_kept_distinct():
    dotted, underscored = exposed_name("fs", "read.file"), exposed_name("fs", "read_file")
    assert NAME_RE.match(dotted)
    assert dotted != underscored


def test_tiers_come_from_globs_then_read_only_hint_and_default_to_write():
    up = upstream(read_tools=("get_*",), write_tools=("get_secret",))
    assert tier_of({"name": "get_issue"}, up) == "read"
    assert tier_of({"name": "get_secret", "annotations": {"readOnlyHint": True}}, up) == "write"
    assert tier_of({"name": "search", "annotations": {"readOnlyHint": True}}, up) == "read"
    assert tier_of({"name": "search", "annotations": {"readOnlyHint": False}}, up) == "write"
    assert tier_of({"name": "merge"}, up) == "write"


def test_a_policy_view_lists_its_servers_tools_filtered_by_tools_and_deny_globs():
    config = Config(
        upstreams={"gitea": upstream(), "wiki": upstream("wiki")},
        policies={},
    )
    policy = PolicyConfig(name="p", servers=("gitea",), tools=("gitea__*",), deny=("gitea__merge_*",))
    catalogs = {
        "gitea": [
            {"name": "get_issue", "inputSchema": {"type": "object", "$defs": {"x": {}}}},
            {"name": "merge_pr"},
        ],
        "wiki": [{"name": "page"}],
    }
    view = build_view(policy, config, catalogs)
    assert list(view.routes) == ["gitea__get_issue"]
    assert view.routes["gitea__get_issue"].tool == "get_issue"
    assert b'"$defs"' in view.tools_json  # schemas pass through untouched
    assert view.schema_bytes == len(view.tools_json)
