"""Project files run only once the operator approved them, byte for byte.

A project file (``harness.toml`` in a harness's workdir) makes the daemon run commands. The workdir
is where the agent works: an agent that can write there could write one, and the next reload would
run its command outside the agent's sandbox, with whatever the daemon can reach. So the daemon
starts a project's upstreams only while ``<state>/project-approvals.json`` holds the SHA-256 of the
project file's current bytes, recorded by ``harness project allow DIR`` (after the operator read
it). A file changed since is unapproved again: its upstreams are not started (or are stopped on
reload), and the daemon says so, naming the command that approves it. The configuration is read
and checked as before either way, so a policy naming a project upstream stays valid.

What an approval does not cover: files the approved commands themselves run from the project (a
script in it); approve project files whose commands run nothing the agent can change.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.frozen import FrozenMap
from harness.config.model import Config
from harness.config.projects import PROJECT_FILE

APPROVALS_FILE = "project-approvals.json"


def digest(file: Path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    return hashlib.sha256(file.read_bytes()).hexdigest()


def read_approvals(state_dir: Path) -> dict[str, str]:
    """Approved project files (resolved path → SHA-256); none when the file does not exist."""
    path = state_dir / APPROVALS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(path, "", f"not JSON ({exc}); fix or remove it, then approve again") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(path, "", "expected an object of path: sha256; fix or remove it")
    return {str(k): v for k, v in data.items()}


def _write(state_dir: Path, approvals: Mapping[str, str]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = state_dir / APPROVALS_FILE
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(dict(sorted(approvals.items())), out, indent=1)
        out.write("\n")
    os.replace(temporary, path)


def project_file(folder: Path) -> Path:
    """The project file of ``folder`` (resolved); ConfigError when there is none."""
    file = (folder / PROJECT_FILE).resolve()
    if not file.is_file():
        raise ConfigError(file, "", "no project file here")
    return file


def approve(state_dir: Path, folder: Path) -> tuple[Path, str]:
    """Record the project file of ``folder`` as approved as it is now; its path and digest."""
    file = project_file(folder)
    approvals = read_approvals(state_dir)
    approvals[str(file)] = sha = digest(file)
    _write(state_dir, approvals)
    return file, sha


def revoke(state_dir: Path, folder: Path) -> bool:
    """Forget the approval of ``folder``'s project file; whether there was one."""
    file = (folder / PROJECT_FILE).resolve()
    approvals = read_approvals(state_dir)
    if approvals.pop(str(file), None) is None:
        return False
    _write(state_dir, approvals)
    return True


def unapproved_files(config: Config, approvals: Mapping[str, str]) -> tuple[Path, ...]:
    """The project files of ``config`` whose bytes are not the approved ones (or gone)."""
    files = {
        (upstream.project / PROJECT_FILE).resolve()
        for upstream in config.upstreams.values()
        if upstream.project
    }
    unapproved = []
    for file in sorted(files):
        try:
            current = digest(file)
        except OSError:
            current = None
        if current is None or approvals.get(str(file)) != current:
            unapproved.append(file)
    return tuple(unapproved)


def approved_only(config: Config, approvals: Mapping[str, str]) -> tuple[Config, tuple[Path, ...]]:
    """``config`` without the upstreams of unapproved project files, and those files."""
    unapproved = unapproved_files(config, approvals)
    if not unapproved:
        return config, ()
    folders = {file.parent for file in unapproved}
    kept = {
        key: upstream
        for key, upstream in config.upstreams.items()
        if upstream.project is None or upstream.project.resolve() not in folders
    }
    return config.model_copy(update={"upstreams": FrozenMap(kept)}), unapproved
