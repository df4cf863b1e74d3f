"""N1 with a real daemon: what a session (or a process in a harness's tree) can read through the
facade, the trajectory tools and the control socket is scoped to its own harness and the upstreams
its policy exposes, and no secret value the daemon holds for an upstream comes back, or stays at rest
in an upstream's log, however the upstream prints it."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_support import (
    DaemonProcess,
    RawSession,
    env_dumper,
    faulty,
    harness_env,
    running,
    toml_list,
    wait_until,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # one real daemon for the module, ~12 s

SECRET = "lk-9f8e7d6c5b4a3210-SECRET"
NEEDLES = (SECRET, base64.b64encode(SECRET.encode()).decode())
PRINTS = (  # a leaky upstream: prints its token plain and base64 on stderr, then serves
    'echo "connecting to backend with $SVC_TOKEN" >&2; '
    'printf "Authorization: Basic %s\\n" "$(printf %s "$SVC_TOKEN" | base64)" >&2; '
)
CRASHES = 'echo "fatal: bad token $SVC_TOKEN" >&2; exit 3'  # its exit reason holds the token
HIDDEN = "no harness or upstream named {!r} that this session may see"


def _agent(dump: Path, go: Path, result: Path, config: Path, state: Path) -> list[str]:
    """A harness that prints the secret it read (its output is its log), writes its environment,
    then (once ``go`` exists) runs ``harness describe`` and ``harness logs`` of the hidden upstream
    and ``describe`` of its own from inside its own tree."""
    code = f"""
import json, os, subprocess, sys, time
print("agent saw", open({str(dump.with_name("leaky.env"))!r}).read().split("=", 1)[1].strip(), flush=True)
open({str(dump)!r}, "w").write(json.dumps(dict(os.environ)))
deadline = time.monotonic() + 120
while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:
    time.sleep(0.02)
out = []
for args in (["describe", "leaky"], ["logs", "leaky"], ["describe", "up", "--json"]):
    cli = [sys.executable, "-m", "harness", *args, "--state-dir", {str(state)!r}, "--config", {str(config)!r}]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    out.append([done.returncode, done.stdout, done.stderr])
open({str(result)!r} + ".tmp", "w").write(json.dumps(out))
os.replace({str(result)!r} + ".tmp", {str(result)!r})
time.sleep(3600)
"""
    return [sys.executable, "-c", code]


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[DaemonProcess, dict[str, dict[str, str]], Path]]:
    tmp = tmp_path_factory.mktemp("scope")
    (tmp / "leaky.env").write_text(f"LEAKY_SECRET={SECRET}\n")
    serve = " ".join(faulty())
    dumps = {name: tmp / f"{name}.env.json" for name in ("narrow", "wide", "writer")}
    agent = _agent(dumps["narrow"], tmp / "go", tmp / "inside.json", tmp / "harness.toml", tmp / "state")
    config = (
        f"[mcp.up]\nargv = {toml_list(faulty())}\n\n"
        f"[mcp.leaky]\nargv = {toml_list(['/bin/sh', '-c', PRINTS + f'exec {serve}'])}\n"
        'env_file = "leaky.env"\nenv = { SVC_TOKEN = "${LEAKY_SECRET}" }\n\n'
        f"[mcp.crashy]\nargv = {toml_list(['/bin/sh', '-c', CRASHES])}\n"
        'env_file = "leaky.env"\nenv = { SVC_TOKEN = "${LEAKY_SECRET}" }\nrestart_delay = "30s"\n\n'
        f"[mcp.mine]\nargv = {toml_list(['/bin/sh', '-c', PRINTS + f'exec {serve}'])}\nshared = false\n"
        'env_file = "leaky.env"\nenv = { SVC_TOKEN = "${LEAKY_SECRET}" }\n\n'
        '[mcp_policy.narrow]\nservers = ["up", "mine"]\n\n[mcp_policy.wide]\nservers = ["up", "leaky", "mine"]\n\n'
        f'[harness.narrow]\nargv = {toml_list(agent)}\nmcp_policy = "narrow"\n\n'
        f'[harness.wide]\nargv = {toml_list(env_dumper(dumps["wide"]))}\nmcp_policy = "wide"\n\n'
        f'[harness.writer]\nargv = {toml_list(env_dumper(dumps["writer"]))}\nmcp_policy = "narrow"\n'
        'mcp_allow = ["read", "write"]\n'
    )
    with running(tmp, config) as daemon:
        envs = {name: harness_env(dump) for name, dump in dumps.items()}
        yield daemon, envs, tmp


class Session:
    """One raw MCP session through `harness mcp`; every answer's text is kept to search it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.raw = RawSession(env)
        self.raw.initialize()
        self.n = 0
        self.seen: list[str] = []

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        answer = self.raw.request(self.n, method, params)
        self.seen.append(json.dumps(answer))
        return answer

    def call(self, tool: str, **arguments: Any) -> tuple[bool, Any]:
        """(ok, the structured result or the error text)."""
        answer = self.ask("tools/call", {"name": tool, "arguments": arguments})
        if "error" in answer:
            return False, answer["error"]["message"]
        result = answer["result"]
        if result.get("isError"):
            return False, result["content"][0]["text"]
        return True, result.get("structuredContent", result)

    def close(self) -> None:
        self.raw.close()


@pytest.fixture
def session(fleet) -> Iterator[Any]:
    opened: list[Session] = []

    def open_as(name: str | None) -> Session:
        env = (
            dict(fleet[1][name])
            if name
            else {k: v for k, v in fleet[1]["narrow"].items() if k != "HARNESS_MCP_TOKEN"}
        )
        opened.append(Session(env))
        return opened[-1]

    yield open_as
    for s in opened:
        s.close()
    answers = [text for s in opened for text in s.seen]
    assert not [n for n in NEEDLES if any(n in text for text in answers)], "a secret came back"


def _runs(daemon: DaemonProcess) -> dict[str, str]:
    return {row["name"]: row["run_id"] for row in json.loads(daemon.harness_cli("list", "--json").stdout)}


def test_a_narrow_harness_reads_only_itself_and_the_upstreams_its_policy_exposes(fleet, session):
    daemon = fleet[0]
    writer = session("writer")
    assert writer.call("harness_list")[0]
    wait_until(lambda: any(c["harness"] == "writer" for c in daemon.calls()), timeout=30)
    narrow = session("narrow")
    for tool, name in [("harness_logs", "leaky"), ("harness_logs", "writer"), ("harness_describe", "leaky")]:
        assert narrow.call(tool, name=name) == (False, HIDDEN.format(name)), (tool, name)
    for name in ("writer", "nobody"):  # a sibling reads as one that does not exist
        assert narrow.call("harness_describe", name=name) == (False, HIDDEN.format(name))
    assert narrow.call("harness_logs", name="up")[0]
    assert "agent saw [REDACTED]" in wait_until(
        lambda: narrow.call("harness_logs", name="narrow")[1]["lines"], timeout=30
    )
    assert narrow.call("harness_describe", name="up")[1]["name"] == "up"
    assert [row["name"] for row in narrow.call("harness_list")[1]["harnesses"]] == ["narrow"]
    failures = narrow.call("harness_recent_failures", harness="writer")
    assert failures == (False, "harness_recent_failures: " + HIDDEN.format("writer"))
    assert narrow.call("harness_run_calls", run_id=_runs(daemon)["writer"])[1]["calls"] == []


def test_a_harness_whose_policy_exposes_the_leaky_upstream_reads_its_log_with_the_secret_redacted(session):
    wide = session("wide")
    _ok, logs = wait_until(
        lambda: (r := wide.call("harness_logs", name="leaky"))[0] and len(r[1]["lines"]) >= 2 and r,
        timeout=30,
    )
    assert logs["lines"][:2] == ["connecting to backend with [REDACTED]", "Authorization: Basic [REDACTED]"]
    assert wide.call("harness_describe", name="leaky")[1]["name"] == "leaky"
    assert wide.call("harness_logs", name="narrow") == (False, HIDDEN.format("narrow"))


def test_an_unshared_upstream_shows_a_harness_its_own_instance_only_and_the_operator_names_one(
    fleet, session
):
    daemon = fleet[0]
    wide, narrow = session("wide"), session("narrow")
    assert (
        wide.call("mine__echo", text="start my instance")[0] and narrow.call("mine__echo", text="mine too")[0]
    )
    _ok, logs = wait_until(
        lambda: (r := wide.call("harness_logs", name="mine"))[0] and r[1]["lines"] and r, timeout=30
    )
    assert logs["lines"][0] == "connecting to backend with [REDACTED]"
    assert logs["path"].endswith("mine@wide.log")
    assert narrow.call("harness_logs", name="mine")[1]["path"].endswith("mine@narrow.log")
    other = narrow.call("harness_logs", name="mine@wide")
    assert other == (False, "logs: 'mine' runs an instance per harness: name one as mine@HARNESS")
    assert list(wide.call("harness_describe", name="mine")[1]["instances"]) == ["wide"]
    operator = json.loads(daemon.harness_cli("describe", "mine", "--json").stdout)
    assert list(operator["instances"]) == ["narrow", "wide"]
    assert json.loads(daemon.harness_cli("logs", "mine@wide", "--json").stdout)["lines"] == logs["lines"]
    assert "name one as mine@HARNESS" in daemon.harness_cli("logs", "mine", check=False).stderr


def test_a_write_harness_lists_its_siblings_state_but_reads_neither_their_logs_nor_hidden_upstreams(session):
    writer = session("writer")
    rows = {row["name"]: row for row in writer.call("harness_list")[1]["harnesses"]}
    assert set(rows) == {"narrow", "wide", "writer"} and "policy" in rows["writer"]
    assert set(rows["narrow"]) == {"name", "state", "pid", "run_id"}
    assert writer.call("harness_logs", name="narrow") == (False, HIDDEN.format("narrow"))
    assert writer.call("harness_describe", name="leaky") == (False, HIDDEN.format("leaky"))


def test_an_unattributed_session_lists_no_harness_tool_and_is_refused_one(session):
    nobody = session(None)
    names = [t["name"] for t in nobody.ask("tools/list")["result"]["tools"]]
    assert not [n for n in names if n.startswith("harness_")], names
    ok, refusal = nobody.call("harness_logs", name="leaky")
    assert (
        not ok and refusal.startswith("not_permitted: ") and "this session has no harness identity" in refusal
    )


def test_describe_and_logs_of_a_hidden_upstream_from_inside_a_harness_tree_are_refused(fleet):
    _daemon, _envs, tmp = fleet
    (tmp / "go").touch()
    out = json.loads(
        wait_until(lambda: (tmp / "inside.json").exists() and (tmp / "inside.json").read_text(), timeout=30)
    )
    (describe_rc, _, describe_err), (logs_rc, logs_out, logs_err), (own_rc, own_out, _) = out
    assert describe_rc != 0 and HIDDEN.format("leaky") in describe_err
    assert logs_rc != 0 and HIDDEN.format("leaky") in logs_err and not logs_out
    assert own_rc == 0 and json.loads(own_out)["name"] == "up"


def test_the_operator_reads_logs_redacted_and_no_upstream_log_or_store_file_holds_the_secret(fleet):
    daemon = fleet[0]
    lines = json.loads(daemon.harness_cli("logs", "leaky", "--json").stdout)["lines"]
    assert lines[:2] == ["connecting to backend with [REDACTED]", "Authorization: Basic [REDACTED]"]
    assert (
        "agent saw [REDACTED]" in json.loads(daemon.harness_cli("logs", "narrow", "--json").stdout)["lines"]
    )
    store = [daemon.state / "harness.db", daemon.state / "harness.db-wal"]
    wait_until(
        lambda: any(p.exists() and b"fatal: bad token [REDACTED]" in p.read_bytes() for p in store),
        timeout=30,
    )
    agents = daemon.state / "harnesses"  # an agent's own output: redacted when read
    files = [
        p for p in daemon.state.rglob("*") if p.is_file() and not p.is_socket() and agents not in p.parents
    ]
    assert {"leaky.log", "crashy.log", "mine@probe.log"} <= {p.name for p in files}
    leaks = [(n, p.name) for p in files for n in NEEDLES if n.encode() in p.read_bytes()]
    assert leaks == []


def test_a_secret_a_reload_adds_is_redacted_from_the_log_of_the_upstream_that_prints_it(fleet):
    daemon, _envs, tmp = fleet
    fresh = "fr-0a1b2c3d4e5f-RELOADED"
    (tmp / "fresh.env").write_text(f"FRESH_SECRET={fresh}\n")
    prints = f'echo "fresh start with $TOKEN" >&2; exec {" ".join(faulty())}'
    daemon.config.write_text(
        daemon.config.read_text()
        + f'\n[mcp.fresh]\nargv = {toml_list(["/bin/sh", "-c", prints])}\nenv_file = "fresh.env"\n'
        'env = { TOKEN = "${FRESH_SECRET}" }\n'
    )
    assert "fresh" in daemon.harness_cli("reload").stdout
    lines = wait_until(
        lambda: json.loads(daemon.harness_cli("logs", "fresh", "--json").stdout)["lines"], timeout=30
    )
    assert lines[0] == "fresh start with [REDACTED]"
    assert fresh.encode() not in (daemon.state / "upstreams" / "fresh.log").read_bytes()
