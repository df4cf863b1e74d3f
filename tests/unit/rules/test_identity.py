"""An identity's grants (policy, allow, exposure, project) come from the configuration one way, at
spawn and on reload."""

from __future__ import annotations

from pathlib import Path

from harness.actors.policy import ApplyConfig, PolicyActor, RegisterToken
from harness.actors.snapshots import Published
from harness.config import Config, load_config
from harness.events.attribution import Attribution
from harness.rules.routing import EMPTY_SNAPSHOT, Identity, RoutingSnapshot

TABLES = """
[mcp_policy.narrow]
servers = []
[mcp_policy.wide]
servers = []
exposure = "lazy"
"""


def _config(tmp_path: Path, name: str, harness: str) -> Config:
    path = tmp_path / f"{name}.toml"
    path.write_text(TABLES + harness)
    return load_config(path)


def _fresh(config: Config) -> Identity:
    who = Attribution(harness="h", run_id="r1", adapter="generic", model=None, config_hash="c")
    return Identity(who, "1" * 32, "", frozenset()).under(config)


def test_a_reloaded_identity_equals_the_one_a_spawn_under_the_new_configuration_derives(tmp_path: Path):
    before = _config(tmp_path, "a", '[harness.h]\nargv = ["true"]\nmcp_policy = "narrow"\n')
    after = _config(
        tmp_path, "b", '[harness.h]\nargv = ["true"]\nmcp_policy = "wide"\nmcp_allow = ["read", "write"]\n'
    )
    assert (_fresh(before).policy, _fresh(after).policy) == ("narrow", "wide")
    routing: Published[RoutingSnapshot] = Published(EMPTY_SNAPSHOT)
    actor = PolicyActor.start(before, routing)
    try:
        actor.ask(RegisterToken("tok", _fresh(before)))
        actor.ask(ApplyConfig(after))
        assert routing.current.identify("tok") == _fresh(after)
    finally:
        actor.stop()


def test_an_identity_whose_harness_the_configuration_lacks_stays_as_it_is(tmp_path: Path):
    config = _config(tmp_path, "a", '[harness.h]\nargv = ["true"]\nmcp_policy = "narrow"\n')
    identity = _fresh(config)
    assert identity.under(_config(tmp_path, "b", "")) is identity
