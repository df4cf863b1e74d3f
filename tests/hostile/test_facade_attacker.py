"""A held-out attacker test of the facade, written from the rules alone (docs/control-socket.md), not
from the code that enforces them.

One real daemon: two upstreams that print their credential to stderr (plain and encoded), one
exposed to every policy and one hidden from the narrow one; three harnesses whose output (their
transcript) carries a marker, one of them an agent that read an upstream's env file. Every facade
and trajectory tool is called with every target by each identity: an unattributed session, a
read-only harness with a narrow policy, and a write-tier harness. Nothing outside the caller's scope
is returned, and no held secret appears, plain or encoded, in any answer, in the operator's CLI
answers, on the status page or /metrics, in the daemon's stderr, or in any file under the state dir.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from daemon_support import PY, RawSession, env_with, faulty, harness_vars, running, toml_list, wait_until

from devtools.credentials import ENCODINGS
from harness.rules.gateway_tools import FACADE_READ_TOOLS, FACADE_WRITE_TOOLS
from support import free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # a real daemon with five children, ~10 s

SECRETS = {"visible": "vis-7Qm2p-HELD-kX91zzT", "hidden": "hid-3Rw8n-HELD-pL55yyQ"}
STDERR_MARK = {"visible": "VISIBLE-STDERR-MARK", "hidden": "HIDDEN-STDERR-MARK"}
TRANSCRIPT = {"narrow": "NARROW-TRANSCRIPT", "writer": "WRITER-TRANSCRIPT", "sibling": "SIBLING-TRANSCRIPT"}
HARNESSES = {
    "narrow": ("narrow", ["read"]),
    "writer": ("wide", ["read", "write"]),
    "sibling": ("wide", ["read"]),
}
EXPOSED = {"narrow": {"visible"}, "writer": {"visible", "hidden"}}
FACADE = [str(t["name"]) for t in (*FACADE_READ_TOOLS, *FACADE_WRITE_TOOLS)]

LEAKY_UPSTREAM = """
import base64, os, sys, urllib.parse
secret, mark = os.environ["SVC_TOKEN"], sys.argv[1]
for form in (secret, base64.b64encode(secret.encode()).decode(), secret.encode().hex(),
             urllib.parse.quote(secret, safe="")):
    print(f"{mark} connecting to the backend with {form}", file=sys.stderr, flush=True)
print(f"{mark} Authorization: Bearer {secret}", file=sys.stderr, flush=True)
sys.stderr.write(f"{mark} split {secret[:7]}"); sys.stderr.flush()
sys.stderr.write(f"{secret[7:]} across two writes\\n"); sys.stderr.flush()
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""

AGENT = """
import json, os, sys, time
print(sys.argv[2], flush=True)
if len(sys.argv) > 3:
    print("I found this:", open(sys.argv[3]).read(), flush=True)
open(sys.argv[1], "w").write(json.dumps(dict(os.environ)))
time.sleep(3600)
"""


def secret_forms() -> list[str]:
    forms = {encode(s) for s in SECRETS.values() for encode in ENCODINGS.values()}
    forms |= {f.upper() for f in forms if all(c in "0123456789abcdef" for c in f)}
    return sorted(forms)


def config_text(tmp_path: Path, metrics_port: int) -> str:
    leaky = tmp_path / "leaky.py"
    leaky.write_text(LEAKY_UPSTREAM)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    text = f'[mcp]\nmetrics_listen = "127.0.0.1:{metrics_port}"\n\n'
    for name, secret in SECRETS.items():
        env_file = tmp_path / f"{name}.env"
        env_file.write_text(f"UPSTREAM_SECRET={secret}\n")
        argv = [PY, str(leaky), STDERR_MARK[name], *faulty()[1:]]
        text += (
            f"[mcp.{name}]\nargv = {toml_list(argv)}\nenv_file = {json.dumps(str(env_file))}\n"
            'env = { SVC_TOKEN = "${UPSTREAM_SECRET}" }\n\n'
        )
    text += (
        '[mcp_policy.narrow]\nservers = ["visible"]\n\n[mcp_policy.wide]\nservers = ["visible", "hidden"]\n\n'
    )
    for name, (policy, allow) in HARNESSES.items():
        argv = [PY, str(agent), str(tmp_path / f"{name}.env.json"), TRANSCRIPT[name]]
        if name == "writer":  # an agent that read an upstream's credential file: its transcript holds it
            argv.append(str(tmp_path / "hidden.env"))
        text += f"[harness.{name}]\nargv = {toml_list(argv)}\nmcp_policy = {json.dumps(policy)}\n"
        text += f"mcp_allow = {toml_list(allow)}\n\n"
    return text


class Attacker:
    """One identity's session and everything it was answered."""

    def __init__(self, env: dict[str, str]) -> None:
        self.session = RawSession(env)
        self.session.initialize()
        self.next_id = 1
        self.answers: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def listed(self) -> set[str]:
        answer = self.request("tools/list", {})
        return {t["name"] for t in answer["result"]["tools"]}

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return self.session.request(self.next_id, method, params, timeout=20)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        self.answers.append((tool, arguments, answer))
        return answer

    def text(self) -> str:
        return json.dumps([a for _, _, a in self.answers])


def result_of(answer: dict[str, Any]) -> Any | None:
    """The structured answer of a facade call that succeeded (None: refused or failed)."""
    result = answer.get("result")
    if result is None or result.get("isError"):
        return None
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])


def attack(attacker: Attacker, run_ids: dict[str, str]) -> None:
    """Every facade tool, with every target the fleet has (and none)."""
    names = [*HARNESSES, *SECRETS]
    for tool in ("harness_list",):
        attacker.call(tool, {})
    for name in names:
        attacker.call("harness_describe", {"name": name})
        attacker.call("harness_logs", {"name": name, "lines": 200})
    for run_id in [*run_ids.values()]:
        attacker.call("harness_run_calls", {"run_id": run_id})
    attacker.call("harness_run_calls", {})
    for harness in HARNESSES:
        attacker.call("harness_recent_failures", {"harness": harness, "since": "1h"})
    attacker.call("harness_recent_failures", {"since": "1h"})


def check_scope(me: str, attacker: Attacker) -> None:
    """What a harness identity was answered stays within its own harness and exposed upstreams."""
    for tool, arguments, answer in attacker.answers:
        result = result_of(answer)
        if result is None:
            continue
        where = f"{me}: {tool} {arguments} -> {json.dumps(result)[:300]}"
        if tool == "harness_list" and "write" not in HARNESSES[me][1]:
            assert {row["name"] for row in result["harnesses"]} <= {me}, where
        if tool in ("harness_describe", "harness_logs"):
            allowed = {me} if result["kind"] == "harness" else EXPOSED[me]
            assert result["name"] in allowed, where
        if tool in ("harness_run_calls", "harness_recent_failures"):
            assert all(row["harness"] == me for row in result["calls"]), where
            assert result.get("harness", me) == me, where
    seen = attacker.text()
    for name, mark in STDERR_MARK.items():
        if name not in EXPOSED[me]:
            assert mark not in seen, f"{me} saw {name}'s stderr"
    for name, mark in TRANSCRIPT.items():
        if name != me:
            assert mark not in seen, f"{me} saw {name}'s output"


def leaked(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [form for form in secret_forms() if form.encode() in data]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def test_no_facade_tool_answers_outside_the_callers_scope_or_with_a_held_secret(tmp_path):
    port = free_port()
    with running(tmp_path, config_text(tmp_path, port)) as daemon:
        envs = {
            name: wait_until(
                lambda n=name: (
                    (tmp_path / f"{n}.env.json").exists() and harness_vars(tmp_path / f"{n}.env.json")
                ),
                timeout=30,
            )
            for name in HARNESSES
        }
        logs = daemon.state
        for name, mark in STDERR_MARK.items():  # both upstreams printed what they leak
            wait_until(
                lambda n=name, m=mark: any(
                    m in p.read_text(errors="replace") for p in logs.rglob(f"{n}.log*")
                ),
                timeout=30,
            )
        # Every harness has calls in its run, the sibling a failure too.
        for name in HARNESSES:
            agent = Attacker(env_with(envs[name]))
            try:
                assert "result" in agent.call("visible__echo", {"text": f"hello from {name}"})
                agent.call("hidden__nosuch", {})
                for form in secret_forms():  # a held secret as a tool name: refused, and not kept
                    agent.call(f"hidden__{form}", {"x": 1})
            finally:
                agent.session.close()
        run_ids = {name: env["HARNESS_RUN_ID"] for name, env in envs.items()}
        wait_until(lambda: len({c["harness"] for c in daemon.calls()} & set(HARNESSES)) == 3, timeout=30)

        unattributed = Attacker(env_with({"HARNESS_SOCKET": envs["narrow"]["HARNESS_SOCKET"]}))
        narrow = Attacker(env_with(envs["narrow"]))
        writer = Attacker(env_with(envs["writer"]))
        try:
            assert not set(FACADE) & unattributed.listed(), "an unattributed session lists facade tools"
            for attacker in (unattributed, narrow, writer):
                attack(attacker, run_ids)
            assert all(result_of(a) is None for _, _, a in unattributed.answers), unattributed.text()[:2000]
            for mark in (*STDERR_MARK.values(), *TRANSCRIPT.values(), *run_ids.values()):
                assert mark not in unattributed.text()
            check_scope("narrow", narrow)
            check_scope("writer", writer)
            # Not vacuous: each sees its own output and its exposed upstreams' stderr, redacted.
            assert STDERR_MARK["visible"] in narrow.text() and TRANSCRIPT["narrow"] in narrow.text()
            assert STDERR_MARK["hidden"] in writer.text() and TRANSCRIPT["writer"] in writer.text()
            assert "I found this" in writer.text()
            for attacker in (unattributed, narrow, writer):
                assert leaked(attacker.text()) == []
        finally:
            for attacker in (unattributed, narrow, writer):
                attacker.session.close()

        operator = [
            daemon.harness_cli(*command, "--json").stdout
            for command in (
                ("logs", "hidden", "-n", "200"),
                ("logs", "writer", "-n", "200"),
                ("describe", "hidden"),
                ("status",),
            )
        ]
        assert STDERR_MARK["hidden"] in operator[0] and TRANSCRIPT["writer"] in operator[1]
        assert leaked("".join(operator)) == []
        page, metrics = get(f"http://127.0.0.1:{port}/"), get(f"http://127.0.0.1:{port}/metrics")
        assert leaked(page) == [] and leaked(metrics) == []
    files = [p for p in daemon.state.rglob("*") if p.is_file()]
    assert any(p.name == "hidden.log" for p in files)
    assert {
        str(p.relative_to(daemon.state)): leaked(p.read_bytes()) for p in files if leaked(p.read_bytes())
    } == {}
    assert leaked("".join(daemon.stderr_lines)) == []
