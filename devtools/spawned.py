"""Helpers for configurations that spawn harnesses in tests and benchmarks: TOML arrays, a harness
that only holds its token, and the environment a bridge needs to present that token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path


def toml_list(items: Iterable[object]) -> str:
    """A TOML array of strings (JSON string escapes are valid TOML basic strings)."""
    return "[" + ", ".join(json.dumps(str(i)) for i in items) + "]"


def env_dumper(out: Path) -> list[str]:
    """The argv of a harness that writes its environment (JSON) to ``out`` and then idles: it holds a
    live token for as long as the daemon runs."""
    code = (
        "import json,os,sys,time; open(sys.argv[1],'w').write(json.dumps(dict(os.environ))); time.sleep(3600)"
    )
    return [sys.executable, "-c", code, str(out)]


def harness_vars(env_file: Path | str) -> dict[str, str]:
    """The ``HARNESS_*`` variables an :func:`env_dumper` harness wrote to ``env_file``."""
    env = json.loads(Path(env_file).read_text())
    return {k: v for k, v in env.items() if k.startswith("HARNESS_")}


def env_with(harness_env: dict[str, str]) -> dict[str, str]:
    """This process's environment, its ``HARNESS_*`` replaced by ``harness_env``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}, **harness_env}


def daemon_with_harnesses(
    state: Path, tables: str, harnesses: Sequence[str], policy: str = "p", timeout: float = 60.0
) -> tuple[subprocess.Popen[bytes], dict[str, dict[str, str]]]:
    """A ``harness daemon`` on ``tables`` (upstreams and policies, TOML) plus one :func:`env_dumper`
    harness per name under ``policy``, its stderr in ``state/daemon.log``; returned once every harness
    wrote its environment, with each one's ``HARNESS_*`` variables by name."""
    config = state / "harness.toml"
    dumps = {name: state / f"{name}.env.json" for name in harnesses}
    config.write_text(
        tables
        + "".join(
            f"[harness.{name}]\nargv = {toml_list(env_dumper(out))}\nmcp_policy = {json.dumps(policy)}\n\n"
            for name, out in dumps.items()
        )
    )
    with open(state / "daemon.log", "wb") as log:
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness",
                "daemon",
                "--config",
                str(config),
                "--state-dir",
                str(state / "s"),
            ],
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while not all(out.exists() and out.stat().st_size for out in dumps.values()):
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            raise RuntimeError(
                f"the daemon did not start its harnesses: {(state / 'daemon.log').read_text()}"
            )
        time.sleep(0.05)
    return daemon, {name: harness_vars(out) for name, out in dumps.items()}
