"""Project upstreams in tool views: a policy's NAME means the harness's own project's upstream, and
another project's tools are neither listed, routed nor known."""

from __future__ import annotations

import json
from pathlib import Path

from tests_support import catalog

from harness.actors.asking import Barrier
from harness.actors.policy import PolicyActor
from harness.actors.snapshots import Published
from harness.config import Config, HarnessConfig, PolicyConfig, UpstreamConfig
from harness.events.attribution import Attribution
from harness.rules.exposure import build_view
from harness.rules.routing import EMPTY_SNAPSHOT, Identity

ONE, TWO = Path("/work/one"), Path("/work/two")


def _upstream(name: str, project: Path | None = None) -> UpstreamConfig:
    return UpstreamConfig(name=name, argv=("x",), project=project, read_tools=("*",))


def _config() -> Config:
    """A global ``gitea``, a ``web`` in each of two projects and a ``db`` in the second only;
    harness ``a`` in project one, ``b`` in project two, ``c`` in none; all under policy ``p``."""
    upstreams = [_upstream("gitea"), _upstream("web", ONE), _upstream("web", TWO), _upstream("db", TWO)]
    harnesses = {h: HarnessConfig(name=h, autostart=False, mcp_policy="p") for h in ("a", "b", "c")}
    return Config(
        upstreams={u.key: u for u in upstreams},
        policies={"p": PolicyConfig(name="p", servers=("gitea", "web", "db"))},
        harnesses=harnesses,
        projects={"a": ONE, "b": TWO},
    )


def _catalogs(config: Config) -> dict[str, list[dict[str, str]]]:
    """Each upstream lists one tool named after its project: ``web`` of two lists ``fetch_two``."""
    tools = {
        u.key: [{"name": f"fetch_{u.project.name if u.project else 'all'}"}]
        for u in config.upstreams.values()
    }
    tools[_upstream("web", TWO).key].append({"name": "fetch_one"})  # a name the other project's web has
    return tools


def test_a_policy_name_reaches_the_harness_projects_own_upstream_and_the_global_ones():
    config = _config()
    policy = config.policies["p"]
    one = build_view(policy, config, _catalogs(config), project=ONE)
    two = build_view(policy, config, _catalogs(config), project=TWO)
    none = build_view(policy, config, _catalogs(config))
    assert {n: r.upstream for n, r in one.routes.items()} == {
        "gitea__fetch_all": "gitea",
        "web__fetch_one": _upstream("web", ONE).key,
    }
    assert {n: r.upstream for n, r in two.routes.items()} == {
        "gitea__fetch_all": "gitea",
        "web__fetch_two": _upstream("web", TWO).key,
        "web__fetch_one": _upstream("web", TWO).key,  # same name, this project's upstream
        "db__fetch_two": _upstream("db", TWO).key,
    }
    assert list(none.routes) == ["gitea__fetch_all"]
    assert (one.servers, two.servers, none.servers) == (("gitea", "web"), ("gitea", "web", "db"), ("gitea",))
    assert [t["name"] for t in json.loads(one.listing_json) if "__" in t["name"]] == list(one.routes)


def _identity(harness: str, project: Path | None) -> Identity:
    attribution = Attribution(harness=harness, run_id=harness, adapter="generic", model="", config_hash="")
    return Identity(attribution, "0" * 32, "p", frozenset({"read"}), project=project)


def test_the_policy_actor_publishes_a_view_and_the_known_tools_per_project():
    config = _config()
    published = Published(EMPTY_SNAPSHOT)
    actor = PolicyActor.start(config, published)
    try:
        for key, tools in _catalogs(config).items():
            actor.tell(catalog(key, tools))
        actor.ask(Barrier(), timeout=10)
        snapshot = published.current
    finally:
        actor.stop()
    one = snapshot.view_for(_identity("a", ONE))
    none = snapshot.view_for(_identity("c", None))
    assert set(one.routes) == {"gitea__fetch_all", "web__fetch_one"}
    assert set(none.routes) == {"gitea__fetch_all"}
    assert snapshot.known_route("db__fetch_two", TWO).upstream == _upstream("db", TWO).key
    assert snapshot.known_route("db__fetch_two", ONE) is None  # another project's: unknown, not excluded
    assert snapshot.known_route("web__fetch_one", ONE).upstream == _upstream("web", ONE).key
    assert snapshot.known_route("web__fetch_one", TWO).upstream == _upstream("web", TWO).key
    assert snapshot.known_route("gitea__fetch_all", None).upstream == "gitea"
    assert snapshot.known_route("web__fetch_one", None) is None
