"""A real daemon fuzzed with hostile MCP traffic (issue 9), its figures as a dict: what
``bench/fuzz.py`` runs at 100,000 messages and ``tests/hostile/test_fuzz.py`` at 4,000.

The daemon runs one upstream (tests/fixtures/faulty_upstream.py) and two spawned harnesses that
only hold their tokens, ``fuzzer`` and ``sibling``; :func:`devtools.fuzz.run_fuzz` writes the
hostile messages as ``fuzzer`` while ``sibling`` calls through a real ``harness mcp`` bridge.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw

from devtools.children import stop_daemon
from devtools.fuzz import FuzzPace, FuzzResult, Sibling, run_fuzz
from devtools.spawned import env_dumper, env_with, harness_vars, toml_list

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "fixtures" / "faulty_upstream.py"
PY = sys.executable
TOOLS = ("up__echo", "up__whoami", "up__count", "up__sleep", "up__hang", "up__env")


def config_text(folder: Path) -> str:
    """The daemon's configuration: the fuzzer may call echo/whoami/count, never sleep/hang/env."""
    return (
        f"[mcp.up]\nargv = {toml_list([PY, FAULTY])}\nmax_concurrency = 64\n\n"
        '[mcp_policy.fuzz]\nservers = ["up"]\ndeny = ["up__sleep", "up__hang", "up__env"]\n\n'
        '[mcp_policy.calm]\nservers = ["up"]\ntools = ["up__echo"]\n\n'
        f'[harness.fuzzer]\nargv = {toml_list(env_dumper(folder / "fuzzer.env"))}\nmcp_policy = "fuzz"\n'
        'mcp_allow = ["read"]\n\n'
        f'[harness.sibling]\nargv = {toml_list(env_dumper(folder / "sibling.env"))}\nmcp_policy = "calm"\n'
        'mcp_allow = ["read"]\n'
    )


def _wait_file(path: Path, timeout: float, daemon: subprocess.Popen[bytes], stderr: list[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        if time.monotonic() > deadline or daemon.poll() is not None:
            daemon.kill()
            daemon.wait(10)
            log = b"".join(stderr).decode(errors="replace")
            raise SystemExit(f"{path.name} not written within {timeout} s; daemon stderr:\n{log}")
        time.sleep(0.05)


def _rows(db: Path) -> dict[str | None, int]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return dict(conn.execute("SELECT harness, count(*) FROM call_log GROUP BY harness").fetchall())
    finally:
        conn.close()


def fuzz_daemon(
    folder: Path, messages: int, seed: int, per_session: int = 5000, quiet: bool = False
) -> dict[str, object]:
    """Run the whole check in ``folder``; the figures, with ``ok`` saying whether every bar held."""
    (folder / "harness.toml").write_text(config_text(folder))
    state = folder / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    daemon = subprocess.Popen(
        [PY, "-m", "harness", "daemon", "--config", str(folder / "harness.toml"), "--state-dir", str(state)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    stderr: list[bytes] = []
    assert daemon.stderr is not None
    reader = threading.Thread(target=lambda: stderr.extend(daemon.stderr or ()), daemon=True)
    reader.start()
    try:
        for name in ("fuzzer", "sibling"):
            _wait_file(folder / f"{name}.env", 60, daemon, stderr)
        fuzzer, sibling_env = harness_vars(folder / "fuzzer.env"), harness_vars(folder / "sibling.env")
        sibling = Sibling(env_with(sibling_env), "up__echo")
        sibling.start()

        def progress(r: FuzzResult) -> None:
            if not quiet and r.messages % 10_000 == 0:
                mb, calls = r.bytes_sent / 1e6, sibling.stats.calls
                print(f"  {r.messages:,} messages, {mb:.1f} MB, sibling {calls} calls", flush=True)

        result = run_fuzz(
            fuzzer["HARNESS_SOCKET"],
            fuzzer["HARNESS_MCP_TOKEN"],
            messages=messages,
            seed=seed,
            tool_names=TOOLS,
            alive=lambda: daemon.poll() is None,
            pace=FuzzPace(per_session=per_session),
            progress=progress,
        )
        seen = sibling.finish()
        alive_at_end = daemon.poll() is None
        rows: dict[str | None, int] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # rows are committed within a second of the answer
            rows = _rows(state / "harness.db")
            if rows.get("fuzzer", 0) >= result.calls_sent and rows.get("sibling", 0) >= seen.calls:
                break
            time.sleep(0.1)
    finally:
        code = stop_daemon(daemon, reader)
    log = b"".join(stderr).decode(errors="replace")
    figures: dict[str, object] = {
        "messages": result.messages,
        "megabytes": round(result.bytes_sent / 1e6, 1),
        "seconds": round(result.seconds, 1),
        "sessions": result.sessions,
        "session_drops": result.session_drops,
        "owed_answers": result.owed_answers,
        "answered": result.answered,
        "hangs": result.hangs,
        "calls_sent": result.calls_sent,
        "fuzzer_rows": rows.get("fuzzer", 0),
        "unattributed_rows": rows.get(None, 0),
        "sibling_calls": seen.calls,
        "sibling_rows": rows.get("sibling", 0),
        "sibling_failures": seen.failures[:5],
        "sibling_median_ms": round(seen.median_ms(), 2),
        "sibling_p99_ms": round(seen.p99_ms(), 2),
        "daemon_alive_at_end": alive_at_end,
        "daemon_exit": code,
        "tracebacks": log.count("Traceback"),
        "first_traceback": log[max(0, log.find("Traceback") - 300) :][:4000] if "Traceback" in log else "",
        "stderr_kb": round(len(log) / 1024, 1),
    }
    figures["ok"] = (
        alive_at_end
        and code == 0
        and not result.hangs
        and result.session_drops == 0
        and result.answered == result.owed_answers
        and figures["fuzzer_rows"] == result.calls_sent
        and figures["sibling_rows"] == seen.calls
        and seen.calls > 0
        and not seen.failures
        and figures["tracebacks"] == 0
    )
    return figures
