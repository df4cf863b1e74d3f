"""`harness policy what-if`: a proposed policy replayed over a generated 30-day store, checked against
a brute-force recomputation that evaluates servers, globs and tiers directly."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fnmatch import fnmatchcase

import pytest

import harness
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.cli.proposal import apply_proposal, read_proposal
from harness.cli.tools import latest_catalogs
from harness.cli.whatif import what_if
from harness.cli.whatif_command import as_object, grouped_calls
from harness.config import ConfigError, load_config
from harness.naming import exposed_name
from harness.sample_store import DEFAULT_CATALOGS, SyntheticLog

START = 1_790_000_000.0
LONG_TOOL = "summarise_the_whole_repository_history_in_one_paragraph"

CONFIG = """
[mcp.git]
argv = ["mcp-server-git"]
read_tools = ["git_status", "git_diff", "git_log"]
[mcp.github]
argv = ["mcp-server-github"]
read_tools = ["get_*", "search_*"]
write_tools = ["get_secret*"]
[mcp.fetch]
argv = ["mcp-server-fetch"]
[mcp.time]
argv = ["mcp-server-time"]

[mcp_policy.dev]
servers = ["git", "github", "fetch", "time"]
[mcp_policy.reader]
servers = ["git", "github", "time"]
exposure = "lazy"

[harness.reviewer]
argv = ["agent"]
mcp_policy = "dev"
[harness.coder]
argv = ["agent"]
mcp_policy = "dev"
mcp_allow = ["read", "write"]
[harness.triage]
argv = ["agent"]
mcp_policy = "reader"
"""
# docs-writer is in the log but not in the configuration any more.

PROPOSAL = """
[mcp_policy.dev]
servers = ["git", "github", "time"]
tools = ["git__*", "github__*", "time__*"]
deny = ["github__create_*", "git__summarise_*"]
exposure = "top_k"
top_k = 3

[mcp_policy.narrow]
servers = ["git"]
tools = ["git__git_[sd]*"]

[harness.triage]
mcp_policy = "narrow"
mcp_allow = ["read", "write"]
"""


def catalogs() -> dict:
    """The synthetic catalogues with annotations, a tier override and a name that gets shortened."""
    out = copy.deepcopy(DEFAULT_CATALOGS)
    for tool in out["fetch"] + out["time"]:
        tool["annotations"] = {"readOnlyHint": True}
    out["git"].append({"name": LONG_TOOL, "description": "x " * 400, "inputSchema": {"type": "object"}})
    out["github"].append(
        {"name": "get_secret_scanning_alerts", "annotations": {"readOnlyHint": True}, "inputSchema": {}}
    )
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("whatif")
    state = root / "state"
    state.mkdir()
    events = list(SyntheticLog(calls=4000, seed=11, days=30, start=START, catalogs=catalogs()).events())
    writer = LogWriterActor.start(state / "harness.db", EventIntake())
    writer.proxy().write(events).get(timeout=60)
    writer.stop()
    (root / "harness.toml").write_text(CONFIG)
    (root / "proposed.toml").write_text(PROPOSAL)
    return root


def brute_force(config, cats, rows):
    """Per harness: calls, refused calls and {(upstream, tool): reason}, from first principles."""
    result = {}
    for name, table in config.harnesses.items():
        policy_name = table.mcp_policy or config.mcp.default_policy
        policy = config.policies[policy_name] if policy_name else None
        calls, denied, reasons = 0, 0, {}
        for row in rows:
            if row["harness"] != name or row["upstream"] == "harness":
                continue
            calls += 1
            reason = _refusal(config, cats, policy, table.mcp_allow, row["upstream"], row["tool"])
            if reason:
                denied += 1
                reasons[row["upstream"], row["tool"]] = reason
        result[name] = (calls, denied, reasons)
    return result


def _refusal(config, cats, policy, allow, upstream, tool):
    entry = next((t for t in cats.get(upstream, ()) if t["name"] == tool), None)
    if upstream not in config.upstreams or entry is None:
        return "unknown_tool"
    name = exposed_name(upstream, tool)
    if policy is None or upstream not in policy.servers:
        return "excluded"
    if any(fnmatchcase(name, g) for g in policy.deny):
        return "excluded"
    if policy.tools and not any(fnmatchcase(name, g) for g in policy.tools):
        return "excluded"
    up = config.upstreams[upstream]
    if any(fnmatchcase(tool, g) for g in up.write_tools):
        tier = "write"
    elif any(fnmatchcase(tool, g) for g in up.read_tools):
        tier = "read"
    else:
        tier = "read" if (entry.get("annotations") or {}).get("readOnlyHint") is True else "write"
    if tier == "write" and "write" not in allow:
        return "write_tier"
    return None


def test_what_if_on_a_30_day_store_matches_a_brute_force_recomputation(setup):
    config = load_config(setup / "harness.toml")
    proposed = apply_proposal(config, read_proposal(setup / "proposed.toml"))
    with harness.open_store(setup / "state" / "harness.db") as view:
        cats = latest_catalogs(view)
        rows = view.calls()
        since = rows[len(rows) // 3]["ts"]
        recent = [r for r in rows if r["ts"] >= since]
        grouped = grouped_calls(view, since)
    assert {r["upstream"] for r in rows} >= {"git", "github", "fetch", "time", "harness"}
    assert any(r["tool"] == LONG_TOOL for r in rows) and exposed_name("git", LONG_TOOL) != f"git__{LONG_TOOL}"
    result = what_if(config, proposed, cats, grouped)
    assert result == what_if(config, proposed, cats, recent)  # a grouped row counts as its calls
    expected, expected_now = brute_force(proposed, cats, recent), brute_force(config, cats, recent)
    got = {h.harness: h for h in result.harnesses}
    assert set(got) == {"reviewer", "coder", "triage"}
    for name, (calls, denied, reasons) in expected.items():
        h = got[name]
        assert (h.calls, h.denied, h.denied_now) == (calls, denied, expected_now[name][1])
        assert {(d.upstream, d.tool): d.reason for d in h.denied_tools} == reasons
        assert sum(d.calls for d in h.denied_tools) == denied
    assert {r for _c, _d, reasons in expected.values() for r in reasons.values()} == {
        "excluded",
        "write_tier",
    }
    assert got["coder"].denied_now == 0 < got["coder"].denied  # fetch leaves, create_* is denied
    gone = sum(1 for r in recent if r["harness"] == "docs-writer" and r["upstream"] != "harness")
    assert result.unconfigured == {"docs-writer": gone}
    assert result.gateway_calls == sum(1 for r in recent if r["upstream"] == "harness")
    assert result.calls == len(recent)


def test_tools_leaving_and_joining_the_list_match_the_policies_evaluated_directly(setup):
    config = load_config(setup / "harness.toml")
    proposed = apply_proposal(config, read_proposal(setup / "proposed.toml"))
    with harness.open_store(setup / "state" / "harness.db") as view:
        cats = latest_catalogs(view)
    result = what_if(config, proposed, cats, [])

    def listed(cfg, name):
        table = cfg.harnesses[name]
        policy = cfg.policies[table.mcp_policy]
        return {
            exposed_name(up, t["name"])
            for up, tools in cats.items()
            for t in tools
            if not _refusal(cfg, cats, policy, table.mcp_allow, up, t["name"])
        }

    for h in result.harnesses:
        before, after = listed(config, h.harness), listed(proposed, h.harness)
        assert set(h.leaves) == before - after and set(h.joins) == after - before
    got = {h.harness: h for h in result.harnesses}
    assert {"fetch__fetch", "github__create_pull_request", exposed_name("git", LONG_TOOL)} <= set(
        got["coder"].leaves
    )
    assert got["triage"].joins == () and {"git__git_log", "time__get_current_time"} <= set(
        got["triage"].leaves
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "policy", "what-if", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_json_report_says_per_harness_denials_list_changes_and_bytes_as_harness_tools_does(setup):
    common = ("--config", str(setup / "harness.toml"), "--state-dir", str(setup / "state"))
    done = run_cli(
        "--policy", str(setup / "proposed.toml"), "--since", "2026-01-01T00:00:00Z", "--json", *common
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    reviewer = next(h for h in report["harnesses"] if h["harness"] == "reviewer")
    assert reviewer["policy"] == {"now": "dev", "proposed": "dev"}
    assert reviewer["exposure"] == {"now": "full", "proposed": "top_k"}
    assert set(reviewer["bytes_per_mode"]) == {"full_untrimmed", "full", "lazy", "top_k"}
    tools = subprocess.run(
        [sys.executable, "-m", "harness", "tools", "--harness", "reviewer", "--json", *common],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert reviewer["bytes_per_mode_now"] == json.loads(tools.stdout)["bytes_per_mode"]
    config = load_config(setup / "harness.toml")
    proposed = apply_proposal(config, read_proposal(setup / "proposed.toml"))
    with harness.open_store(setup / "state" / "harness.db") as view:
        rows = grouped_calls(view, "2026-01-01T00:00:00.000Z")
        top = {h: [(u, t) for u, t, _n in view.top_tools(h, 8)] for h in config.harnesses}
        expected = what_if(config, proposed, latest_catalogs(view), rows, top)
    assert report == as_object(expected, setup / "proposed.toml", "2026-01-01T00:00:00.000Z")


def test_the_table_names_each_harness_and_why_its_calls_would_be_refused(setup):
    done = run_cli(
        "--policy", str(setup / "proposed.toml"), "--since", "2026-01-01T00:00:00Z",
        "--config", str(setup / "harness.toml"), "--state-dir", str(setup / "state"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "reviewer: would deny" in done.stdout
    assert "write tool, mcp_allow lacks write" in done.stdout and "excluded by policy" in done.stdout
    assert "docs-writer (no longer configured)" in done.stdout


def test_a_proposed_policy_replaces_the_table_of_its_name_and_harnesses_keep_their_policy_names(setup):
    config = load_config(setup / "harness.toml")
    proposed = apply_proposal(config, read_proposal(setup / "proposed.toml"))
    assert (
        proposed.policies["dev"].exposure == "top_k"
        and proposed.policies["reader"] == config.policies["reader"]
    )
    assert proposed.harnesses["reviewer"] == config.harnesses["reviewer"]
    assert proposed.harnesses["triage"].mcp_policy == "narrow"
    assert proposed.harnesses["triage"].argv == config.harnesses["triage"].argv


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ('[mcp_policy.x]\nservers = ["nope"]\n', "mcp_policy.x.servers", "no upstream named 'nope'"),
        ('[mcp_policy.x]\ndeny = ["git__[a"]\n', "mcp_policy.x.deny", "unclosed '['"),
        ('[mcp_policy.x]\ncolour = "red"\n', "mcp_policy.x.colour", "unknown key"),
        (
            '[harness.reviewer]\nargv = ["x"]\n',
            "harness.reviewer.argv",
            "may set only mcp_policy and mcp_allow",
        ),
        ('[harness.ghost]\nmcp_policy = "dev"\n', "harness.ghost", "no harness of that name"),
        ('[harness.reviewer]\nmcp_policy = "nope"\n', "harness.reviewer.mcp_policy", "no policy named"),
        ('[harness.reviewer]\nmcp_allow = ["admin"]\n', "harness.reviewer.mcp_allow[0]", "must be"),
        ('[mcp.git]\nargv = ["x"]\n', "mcp.git", "may set only default_policy"),
        ("", "", "proposes nothing"),
    ],
)
def test_a_bad_policy_file_is_refused_with_its_key_and_reason(setup, tmp_path, text, key, reason):
    file = tmp_path / "p.toml"
    file.write_text(text)
    config = load_config(setup / "harness.toml")
    with pytest.raises(ConfigError) as refused:
        apply_proposal(config, read_proposal(file))
    assert refused.value.key == key and reason in refused.value.reason and refused.value.file == str(file)


def test_the_cli_refuses_a_bad_file_in_one_line_and_a_missing_policy_option_as_usage(setup, tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[mcp_policy.x]\nservers = ["nope"]\n')
    common = ("--config", str(setup / "harness.toml"), "--state-dir", str(setup / "state"))
    done = run_cli("--policy", str(bad), *common)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "mcp_policy.x.servers" in done.stderr and "Traceback" not in done.stderr
    assert run_cli(*common).returncode == 2
