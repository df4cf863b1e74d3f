"""What a control-plane or facade caller may see: the operator everything; a harness itself and the
upstreams its policy exposes; a write-tier harness its siblings' name, state, pid and run id."""

from __future__ import annotations

from pathlib import Path

from harness.config import Config, load_config
from harness.events.attribution import Attribution
from harness.rules.access import OPERATOR, Caller, PeerOrigin, control_caller, session_caller
from harness.rules.exposure import build_view, gateway_view
from harness.rules.gateway_tools import HARNESS_TOOLS, SKILL_TOOLS, gateway_listing
from harness.rules.routing import UNATTRIBUTED, Identity, RoutingSnapshot
from harness.rules.scope import (
    SIBLING_FIELDS,
    exposed_upstreams,
    listed,
    may_see_harness,
    may_see_upstream,
    sees_siblings,
    unseen,
)

READER = Caller(
    operator=False, harness="reader", allow=frozenset({"read"}), why="t", upstreams=frozenset({"up"})
)
WRITER = Caller(
    operator=False, harness="writer", allow=frozenset({"read", "write"}), why="t", upstreams=frozenset({"up"})
)
ROWS = [
    {"name": n, "adapter": "generic", "state": "running", "pid": i, "run_id": f"r{i}", "policy": "p"}
    for i, n in enumerate(["reader", "writer", "other"], 1)
]


def test_a_harness_sees_itself_and_its_exposed_upstreams_and_nothing_else():
    assert may_see_harness(READER, "reader") and not may_see_harness(READER, "writer")
    assert may_see_upstream(READER, "up") and not may_see_upstream(READER, "leaky")


def test_the_operator_sees_every_harness_and_upstream():
    assert may_see_harness(OPERATOR, "anyone") and may_see_upstream(OPERATOR, "leaky")
    assert listed(OPERATOR, ROWS) == ROWS


def test_a_read_only_harness_lists_only_itself():
    assert listed(READER, ROWS) == [ROWS[0]] and not sees_siblings(READER)


def test_a_write_harness_lists_its_siblings_name_state_pid_and_run_id_only():
    rows = listed(WRITER, ROWS)
    assert rows[1] == ROWS[1]
    assert [set(r) for r in (rows[0], rows[2])] == [set(SIBLING_FIELDS)] * 2


def test_a_caller_with_no_harness_identity_sees_nothing():
    nobody = session_caller(UNATTRIBUTED, lambda _i: frozenset({"up"}))
    assert nobody.harness is None and nobody.upstreams == frozenset()
    assert listed(nobody, ROWS) == [] and not may_see_upstream(nobody, "up")


def test_an_unseen_name_reads_the_same_whether_it_exists_or_not():
    assert unseen("leaky") == "no harness or upstream named 'leaky' that this session may see"


def test_a_harness_caller_carries_the_upstreams_its_policy_exposes():
    identity = Identity(Attribution(harness="reader", run_id="r"), "0" * 32, "p", frozenset({"read"}))
    inside = PeerOrigin("harness", 5, 1000, "reader")
    caller = control_caller(inside, None, {"tok": identity}, lambda i: frozenset({f"{i.harness}-up"}))
    assert caller.upstreams == frozenset({"reader-up"})


def _config(tmp_path: Path, skills: str = "") -> Config:
    config_file = tmp_path / "harness.toml"
    config_file.write_text(
        f'{skills}[mcp.up]\nargv = ["x"]\n\n[mcp.leaky]\nargv = ["x"]\n\n'
        '[mcp_policy.p]\nservers = ["up"]\n\n[harness.reader]\nargv = ["x"]\nmcp_policy = "p"\n'
    )
    return load_config(config_file)


def test_exposed_upstreams_are_the_keys_of_the_policys_servers_in_the_harnesss_project(tmp_path: Path):
    config = _config(tmp_path)
    view = build_view(config.policies["p"], config, {}, read_only=True)
    identity = Identity(Attribution(harness="reader", run_id="r"), "0" * 32, "p", frozenset({"read"}))
    snapshot = RoutingSnapshot(1, {}, {("p", True, "full", None): view})
    assert exposed_upstreams(snapshot, config, identity) == frozenset({"up"})


def test_an_unattributed_session_lists_the_skill_tools_but_no_facade_or_trajectory_tool(tmp_path: Path):
    listing = gateway_listing(read_only=True, skills=True, attributed=False)
    assert [t["name"] for t in listing] == [t["name"] for t in SKILL_TOOLS]
    config = _config(tmp_path, '[mcp]\nskill_paths = ["skills"]\n\n')
    policyless = gateway_view(config, read_only=True)
    unattributed = gateway_view(config, read_only=True, attributed=False)
    snapshot = RoutingSnapshot(1, {}, {("", True, "full", None): policyless}, unattributed=unattributed)
    assert snapshot.view_for(UNATTRIBUTED) is unattributed
    assert not HARNESS_TOOLS & {t["name"] for t in unattributed.gateway}
    assert {"harness_list", "harness_logs"} <= {t["name"] for t in policyless.gateway}
