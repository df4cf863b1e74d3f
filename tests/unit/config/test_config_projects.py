"""Project files: ``harness.toml`` in a harness's workdir declaring ``[mcp.NAME]`` upstreams."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.config import ConfigError, config_hash, load_config
from harness.config.hashing import effective_tables
from harness.naming import exposed_name, project_key, upstream_name


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _main(tmp_path: Path, workdirs: dict[str, Path], extra: str = "") -> Path:
    """A main file with one harness per workdir (no autostart) and ``extra`` tables."""
    harnesses = "".join(
        f'[harness.{name}]\nautostart = false\nworkdir = "{folder}"\n\n' for name, folder in workdirs.items()
    )
    return _write(tmp_path / "conf" / "harness.toml", extra + "\n" + harnesses)


def _refused(main: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(main)
    return caught.value


def test_a_project_upstream_is_read_like_a_global_one_with_paths_relative_to_the_project(tmp_path):
    project = tmp_path / "api"
    _write(project / "env" / "web.env", "TOKEN=s3cret-value\n")
    _write(
        project / "harness.toml",
        """
        [mcp.web]
        argv = ["web-mcp"]
        env_file = "env/web.env"
        env = { WEB_TOKEN = "${TOKEN}" }
        timeout = "5s"
        """,
    )
    config = load_config(_main(tmp_path, {"a": project}))
    key = project_key("web", project.resolve())
    assert list(config.upstreams) == [key]
    web = config.upstreams[key]
    assert (web.name, web.key, web.project) == ("web", key, project.resolve())
    assert web.env_file == project / "env" / "web.env"
    assert web.timeout == 5.0
    assert config.project_of("a") == project.resolve()
    assert config.files[-1] == project.resolve() / "harness.toml"


def test_harnesses_sharing_a_workdir_share_its_project_and_the_file_is_read_once(tmp_path):
    project = tmp_path / "api"
    _write(project / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n')
    config = load_config(_main(tmp_path, {"a": project, "b": project / "."}))
    assert config.project_of("a") == config.project_of("b") == project.resolve()
    assert len(config.upstreams) == 1
    assert config.files.count(project.resolve() / "harness.toml") == 1


def test_two_projects_may_each_declare_an_upstream_of_the_same_name(tmp_path):
    one, two = tmp_path / "one" / "app", tmp_path / "two" / "app"
    for folder in (one, two):
        _write(folder / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n')
    config = load_config(_main(tmp_path, {"a": one, "b": two}))
    keys = sorted(config.upstreams)
    assert len(keys) == 2 and all(k.startswith("web@app-") for k in keys)  # same folder name, two ids
    assert {upstream_name(k) for k in keys} == {"web"}
    assert config.upstream_names == {"web"}


def test_a_name_resolves_to_the_harness_projects_own_upstream_and_never_to_anothers(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    _write(one / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n')
    _write(two / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n[mcp.only-two]\nargv = ["x"]\n')
    config = load_config(_main(tmp_path, {"a": one, "b": two}, '[mcp.gitea]\nargv = ["gitea-mcp"]\n'))
    p1, p2 = config.project_of("a"), config.project_of("b")
    assert config.upstream_for("web", p1).key == project_key("web", one.resolve())
    assert config.upstream_for("web", p2).key == project_key("web", two.resolve())
    assert config.upstream_for("gitea", p1).key == "gitea"  # global upstreams reach every project
    assert config.upstream_for("only-two", p1) is None
    assert config.upstream_for(project_key("only-two", two.resolve()), p1) is None  # not by key either
    assert config.upstream_for("web", None) is None  # a harness of no project


def test_a_project_upstream_may_not_take_a_global_upstreams_name(tmp_path):
    project = tmp_path / "api"
    file = _write(project / "harness.toml", '[mcp.gitea]\nargv = ["my-gitea"]\n')
    main = _main(tmp_path, {"a": project}, '[mcp.gitea]\nargv = ["gitea-mcp"]\n')
    error = _refused(main)
    assert error.file == str(file.resolve()) and error.key == "mcp.gitea"
    assert "global upstream" in error.reason and str(main) in error.reason


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ('[mcp.web]\nargv = ["x"]\ncolour = "red"\n', "mcp.web.colour", "unknown key"),
        ('[mcp.web]\nargv = ["x"]\nproject = "/elsewhere"\n', "mcp.web.project", "unknown key"),
        ('[mcp.web]\nargv = ["x"]\ntimeout = "soon"\n', "mcp.web.timeout", ""),
        ('[mcp.web]\nargv = ["x"]\nurl = "http://127.0.0.1:1/mcp"\n', "mcp.web", "exactly one"),
        ('[mcp.Web]\nargv = ["x"]\n', "mcp.Web", "a-z, 0-9"),
        ('[mcp.harness]\nargv = ["x"]\n', "mcp.harness", "reserved"),
        ('[mcp.web]\nargv = ["x"]\nenv = { T = "${TOKEN}" }\n', "mcp.web.env.T", ""),
        ('[mcp]\ndefault_policy = "p"\n', "mcp.default_policy", "only declare [mcp.NAME]"),
        ("[mcp_policy.wide]\nservers = []\n", "mcp_policy", "global-only"),
        ("[mcp]\nweb = 1\n", "mcp.web", "only declare [mcp.NAME]"),
        ('[mcp.web]\nargv = ["x"]\n[harness.b]\nargv = ["y"]\n', "harness", "only declare [mcp.NAME]"),
    ],
)
def test_a_bad_project_file_is_refused_naming_the_project_file_and_key(tmp_path, text, key, reason):
    project = tmp_path / "api"
    file = _write(project / "harness.toml", text)
    error = _refused(_main(tmp_path, {"a": project}))
    assert error.file == str(file.resolve())
    assert error.key == key and reason in error.reason


def test_a_policy_names_a_project_upstream_by_its_name_and_a_name_nobody_declares_is_refused(tmp_path):
    project = tmp_path / "api"
    _write(project / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n')
    config = load_config(_main(tmp_path, {"a": project}, '[mcp_policy.p]\nservers = ["web"]\n'))
    assert config.policies["p"].servers == ("web",)
    key = project_key("web", project.resolve())
    error = _refused(_main(tmp_path, {"a": project}, f'[mcp_policy.p]\nservers = ["{key}"]\n'))
    assert error.key == "mcp_policy.p.servers" and "no upstream named" in error.reason


def test_a_workdir_whose_harness_toml_is_the_main_file_is_no_project(tmp_path):
    main = _write(
        tmp_path / "harness.toml",
        f'[mcp.web]\nargv = ["x"]\n[harness.a]\nautostart = false\nworkdir = "{tmp_path}"\n',
    )
    config = load_config(main)
    assert config.project_of("a") is None
    assert list(config.upstreams) == ["web"] and config.files == (main,)


def test_a_project_upstreams_tools_are_named_by_its_name_in_every_project(tmp_path):
    one, two = project_key("web", tmp_path / "one"), project_key("web", tmp_path / "two")
    assert one != two
    assert exposed_name(one, "fetch") == exposed_name(two, "fetch") == "web__fetch"
    long_tool = "x" * 60
    assert exposed_name(one, long_tool) == exposed_name("web", long_tool)


def test_a_harness_config_hash_covers_its_own_projects_upstream_only(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        _write(folder / "harness.toml", '[mcp.web]\nargv = ["web-mcp"]\n')
    policy = '[mcp]\ndefault_policy = "p"\n[mcp_policy.p]\nservers = ["web"]\n'
    config = load_config(_main(tmp_path, {"a": one, "b": two}, policy))
    assert list(effective_tables(config, "a")["upstreams"]) == [project_key("web", one.resolve())]
    assert list(effective_tables(config, "b")["upstreams"]) == [project_key("web", two.resolve())]
    assert config_hash(config, "a") != config_hash(config, "b")
