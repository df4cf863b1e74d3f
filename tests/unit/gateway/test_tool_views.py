"""What a policy exposes: namespaced names, the shortening rule, tiers, globs."""

from __future__ import annotations

import json
import re

from harness.config import Config, PolicyConfig, UpstreamConfig
from harness.naming import MAX_EXPOSED_NAME, exposed_name
from harness.rules.exposure import build_view, session_listing, tier_of, trim_description
from harness.rules.gateway_tools import FACADE_WRITE_TOOLS
from support import FACADE_READ

FACADE = (*FACADE_READ, *(t["name"] for t in FACADE_WRITE_TOOLS))
"""A harness that may write lists the facade's write tools too."""

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
    assert b'"$defs"' in view.listing_json  # schemas pass through untouched


def policy(**kw) -> PolicyConfig:
    return PolicyConfig(name="p", servers=("gitea",), **kw)


CATALOG = {
    "gitea": [
        {
            "name": "get_issue",
            "description": "Get one issue with its comments. It returns the title, body and each comment.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "annotations": {"readOnlyHint": True},
        },
        {"name": "x" * 60, "description": "A tool with a very long name.", "inputSchema": {"type": "object"}},
    ]
}
CONFIG = Config(upstreams={"gitea": upstream()}, policies={})


def test_full_exposure_trims_descriptions_and_never_touches_schemas():
    view = build_view(policy(max_description_chars=40), CONFIG, CATALOG)
    listed = {t["name"]: t for t in json.loads(view.listing_json)}
    issue = listed["gitea__get_issue"]
    assert issue["description"] == "Get one issue with its comments."
    assert issue["inputSchema"] == CATALOG["gitea"][0]["inputSchema"]
    assert view.tools["gitea__get_issue"]["description"] == CATALOG["gitea"][0]["description"]


def test_trimming_falls_back_to_a_word_boundary_with_an_ellipsis():
    text = "A single long sentence that goes on and on without any full stop in sight at all"
    cut = trim_description(text, 30)
    assert len(cut) <= 30 and cut.endswith("…") and not cut[:-1].endswith(" ")
    assert text.startswith(cut[:-1])


def test_lazy_exposure_lists_only_search_tools_and_call_tool_but_routes_everything():
    view = build_view(policy(exposure="lazy"), CONFIG, CATALOG)
    assert [t["name"] for t in json.loads(view.listing_json)] == ["search_tools", "call_tool", *FACADE]
    assert "gitea__get_issue" in view.routes


def test_top_k_lists_the_harness_top_tools_then_the_gateway_tools():
    view = build_view(policy(exposure="top_k", top_k=1), CONFIG, CATALOG)
    listed = json.loads(session_listing(view, [("gitea", "get_issue"), ("gitea", "x" * 60), ("gone", "t")]))
    assert [t["name"] for t in listed] == ["gitea__get_issue", "search_tools", "call_tool", *FACADE]


def test_a_shortened_name_resolves_under_its_unshortened_form_too():
    view = build_view(policy(), CONFIG, CATALOG)
    short = next(n for n in view.routes if n != "gitea__get_issue")
    assert len(short) <= 50
    assert view.resolve("gitea__" + "x" * 60) == view.routes[short]
    assert view.routes[short].tool == "x" * 60


def test_prompts_and_resources_follow_tools_and_deny_but_a_toolless_upstream_stays_without_an_allowlist():
    config = Config(upstreams={"fs": upstream("fs"), "git": upstream("git"), "docs": upstream("docs")})
    catalogs = {"fs": [{"name": "read"}, {"name": "write"}], "git": [{"name": "log"}], "docs": []}

    def view(**narrowing):
        policy = PolicyConfig(name="p", servers=("fs", "git", "docs"), **narrowing)
        return build_view(policy, config, catalogs)

    assert view().servers == ("fs", "git", "docs")
    denied = view(deny=("git__*", "fs__write*", "fs__setup"))
    assert denied.servers == ("fs", "docs")
    assert not denied.allows_prompt("fs__setup") and denied.allows_prompt("fs__review")
    listed = view(tools=("fs__read",))
    assert listed.servers == ("fs",)
    assert listed.allows_prompt("fs__read") and not listed.allows_prompt("fs__review")
