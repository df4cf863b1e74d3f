"""Helpers for configurations that spawn harnesses in tests and benchmarks: TOML arrays, a harness
that only holds its token, and the environment a bridge needs to present that token."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
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
