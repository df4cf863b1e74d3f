"""Project upstreams through a real daemon: ``[mcp.NAME]`` in a harness's workdir ``harness.toml``
serves that project's harnesses only, runs in the project's folder, once per project (however many
of its harnesses call it, and however many projects declare the same NAME), and follows a reload."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from harness.config.approvals import approve, project_file
from harness.naming import project_key
from support import DEMO_UPSTREAM, PY, probe_argv, read_out, steps, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

DEMO = "harness.demo.upstream"


def _project(folder: Path, *names: str) -> None:
    folder.mkdir(exist_ok=True)
    tables = "".join(f"[mcp.{name}]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n" for name in names)
    (folder / "harness.toml").write_text(tables)


def _harness(name: str, workdir: Path, policy: str, tmp_path: Path, plan: str) -> str:
    argv = probe_argv(tmp_path / f"{name}.json", "--steps", plan)
    return f'[harness.{name}]\nargv = {toml_list(argv)}\nworkdir = "{workdir}"\nmcp_policy = "{policy}"\n\n'


def _text(step: dict) -> str:
    return step["result"]["content"][0]["text"]


def test_each_project_runs_and_sees_its_own_upstreams_and_harnesses_of_one_project_share_them(
    start_daemon, tmp_path
):
    one, two = (tmp_path / "one").resolve(), (tmp_path / "two").resolve()
    _project(one, "web")
    _project(two, "web", "extra")
    for folder in (one, two):  # the operator approved both project files as they are
        file = project_file(folder)
        approve(tmp_path / "state", file, file.read_bytes())
    web_one, web_two = project_key("web", one), project_key("web", two)
    extra_one, extra_two = project_key("extra", one), project_key("extra", two)
    go = tmp_path / "go"

    def plan(name: str, *calls: dict, relisted: bool = True) -> str:
        """``calls``, then wait for the test (which reloads), then list again once the list changed."""
        after = [{"op": "wait_list_changed", "timeout": 30}, {"op": "list"}] if relisted else []
        sync = [
            {"op": "touch", "path": str(tmp_path / f"{name}.called")},
            {"op": "wait_file", "path": str(go)},
        ]
        return steps(*calls, *sync, *after)

    def echo(name: str, upstream: str = "web") -> dict:
        return {"op": "call", "name": f"{upstream}__echo", "arguments": {"text": name}}

    search = {
        "op": "call",
        "name": "search_tools",
        "arguments": {"query": "return the text unchanged", "k": 10},
    }
    via_call_tool = {
        "op": "call",
        "name": "call_tool",
        "arguments": {"name": "web__echo", "arguments": {"text": "a2"}},
    }
    config = (
        '[mcp_policy.p]\nservers = ["web", "extra"]\n\n'
        '[mcp_policy.lazy]\nservers = ["web", "extra"]\nexposure = "lazy"\n\n'
        + _harness("a1", one, "p", tmp_path, plan("a1", echo("a1")))
        + _harness("a2", one, "lazy", tmp_path, plan("a2", search, via_call_tool, relisted=False))
        + _harness("b1", two, "p", tmp_path, plan("b1", echo("b1"), echo("b1", "extra")))
    )
    daemon = start_daemon(config)
    names = ("a1", "a2", "b1")
    wait_until(lambda: all((tmp_path / f"{n}.called").exists() for n in names), timeout=60)

    # One process per project upstream, in its project's folder: a1 and a2 share web@one; the two
    # projects' web (shared = true, the default) are two processes.
    processes = wait_until(lambda: len(found := daemon.descendants_running(DEMO)) == 3 and found, timeout=20)
    assert sorted(p.cwd() for p in processes) == [str(one), str(two), str(two)]
    status = json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]
    assert sorted(status) == sorted([web_one, web_two, extra_two])
    for key, folder in ((web_one, one), (web_two, two), (extra_two, two)):
        assert status[key]["project"] == str(folder) and status[key]["state"] == "up"
        assert psutil.Process(status[key]["pid"]).cwd() == str(folder)
    listed = daemon.harnesses()
    assert {n: listed[n]["project"] for n in names} == {"a1": str(one), "a2": str(one), "b1": str(two)}

    # The call log names each project's upstream by its key.
    rows = wait_until(lambda: len(r := [c for c in daemon.calls() if c["upstream"] != "harness"]) == 4 and r)
    assert sorted((r["harness"], r["upstream"], r["tool"], r["outcome"]) for r in rows) == [
        ("a1", web_one, "echo", "ok"),
        ("a2", web_one, "echo", "ok"),
        ("b1", extra_two, "echo", "ok"),
        ("b1", web_two, "echo", "ok"),
    ]
    found = json.loads(daemon.harness_cli("tools", "search", "echo", "--harness", "a1", "--json").stdout)
    assert {hit["upstream"] for hit in found} == {web_one}
    doctor = daemon.harness_cli("doctor", check=False).stdout
    assert (
        f"{extra_two} (project {two}): shared = true, one instance for every caller of its project: b1"
        in doctor
    )

    # A reload moves [mcp.extra] from project two to project one: it stops there, starts here.
    _project(one, "web", "extra")
    _project(two, "web")
    for folder in (one, two):  # changed files: approved again, with the CLI
        assert "`harness reload` starts them" in daemon.harness_cli("project", "allow", str(folder)).stdout
    reloaded = json.loads(daemon.harness_cli("reload", "--json").stdout)
    assert reloaded["upstreams_changed"] == sorted([extra_one, extra_two])
    processes = wait_until(lambda: len(found := daemon.descendants_running(DEMO)) == 3 and found, timeout=20)
    assert sorted(p.cwd() for p in processes) == [str(one), str(one), str(two)]
    go.touch()

    out = {n: read_out(tmp_path / f"{n}.json") for n in names}
    upstream_tools = {n: sorted(t for t in out[n]["tools"] if "__" in t) for n in ("a1", "b1")}
    assert "web__echo" in upstream_tools["a1"] and not any(
        t.startswith("extra__") for t in upstream_tools["a1"]
    )
    assert {"web__echo", "extra__echo"} <= set(upstream_tools["b1"])
    assert _text(out["a1"]["steps"][0]) == "a1" and _text(out["b1"]["steps"][0]) == "b1"
    results = [hit["name"] for hit in json.loads(_text(out["a2"]["steps"][0]))]
    assert results.count("web__echo") == 1 and not any(n.startswith("extra__") for n in results)
    assert _text(out["a2"]["steps"][1]) == "a2"
    after = {n: out[n]["steps"][-1]["tools"] for n in ("a1", "b1")}
    assert "extra__echo" in after["a1"] and not any(t.startswith("extra__") for t in after["b1"])
    assert daemon.stop() == 0


def test_a_project_file_runs_only_as_the_operator_approved_it(start_daemon, tmp_path):
    """An agent can write to its workdir: a project file there (new, or changed since its approval)
    starts nothing until ``harness project allow``; a change after approval stops it at the reload."""
    project = (tmp_path / "work").resolve()
    _project(project, "web")
    idle = f'[harness.agent]\nargv = ["{PY}", "-c", "import time; time.sleep(600)"]\nworkdir = "{project}"\n'
    daemon = start_daemon('[mcp_policy.p]\nservers = ["web"]\n\n' + idle + 'mcp_policy = "p"\n')
    key = project_key("web", project)

    def upstreams() -> dict:
        return json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]

    assert key not in upstreams() and not daemon.descendants_running(DEMO)
    project_file = str(project / "harness.toml")
    status = json.loads(daemon.harness_cli("status", "--json").stdout)
    assert status["unapproved_projects"] == [project_file]
    said = daemon.harness_cli("status").stdout
    assert f"project file {project_file} is not approved" in said
    assert f"harness project allow {project}" in said
    doctor = daemon.harness_cli("doctor", check=False)
    assert f"project file {project / 'harness.toml'} is not approved" in doctor.stdout
    assert f"harness project allow {project}" in doctor.stdout

    allowed = daemon.harness_cli("project", "allow", str(project)).stdout
    assert f"web: {' '.join(DEMO_UPSTREAM)}" in allowed  # what it runs, as approved
    daemon.harness_cli("reload", "--json")
    wait_until(lambda: upstreams().get(key, {}).get("state") == "up", timeout=30)
    assert json.loads(daemon.harness_cli("status", "--json").stdout)["unapproved_projects"] == []
    assert "not approved" not in daemon.harness_cli("status").stdout

    (project / "harness.toml").write_text(f"[mcp.web]\nargv = {toml_list(['sh', '-c', 'echo pwned'])}\n")
    daemon.harness_cli("reload", "--json")
    wait_until(lambda: key not in upstreams() and not daemon.descendants_running(DEMO), timeout=30)
    assert json.loads(daemon.harness_cli("status", "--json").stdout)["unapproved_projects"] == [project_file]

    assert "was not approved" in daemon.harness_cli("project", "revoke", str(tmp_path), check=False).stderr
    assert daemon.stop() == 0
