"""Project files run only once the operator approved them, byte for byte.

A project file (``harness.toml`` in a harness's workdir) makes the daemon run commands. The workdir
is where the agent works: an agent that can write there could write one, and the next reload would
run its command outside the agent's sandbox, with whatever the daemon can reach. So the daemon
starts a project's upstreams only while ``<state>/project-approvals.json`` holds the SHA-256 of the
project file's current bytes, recorded by ``harness project allow DIR`` (after the operator read
it). A file changed since is unapproved again: its upstreams are not started (or are stopped on
reload), and the daemon says so, naming the command that approves it. The configuration is read
and checked as before either way, so a policy naming a project upstream stays valid.

The digest compared is that of the bytes the loader parsed (``Config.project_digests``), never of
a second read, so a file swapped back and forth around a reload cannot pass. What an approval does
not cover: what the approved commands read or run from the project at spawn (an ``env_file`` there,
a script): approve project files whose commands and env files lie where the agent cannot write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePath

from harness.config.errors import ConfigError
from harness.config.frozen import FrozenMap
from harness.config.model import Config
from harness.config.projects import PROJECT_FILE, digest

APPROVALS_FILE = "project-approvals.json"


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


def approve(state_dir: Path, file: Path, data: bytes) -> str:
    """Record the project file ``file`` (resolved) as approved with the bytes ``data`` (the ones the
    operator was shown: read once); their digest."""
    approvals = read_approvals(state_dir)
    approvals[str(file)] = sha = digest(data)
    _write(state_dir, approvals)
    return sha


def revoke(state_dir: Path, file: Path) -> bool:
    """Forget the approval of the project file ``file`` (resolved); whether there was one."""
    approvals = read_approvals(state_dir)
    if approvals.pop(str(file), None) is None:
        return False
    _write(state_dir, approvals)
    return True


def unapproved_hint(file: PurePath) -> str:
    """What the daemon's log, ``harness doctor``, ``harness status`` and the status page say of an
    unapproved project file: that its upstreams do not run, and the commands that approve it."""
    return (
        f"project file {file} is not approved (new, or changed since): its upstreams do not run;"
        f" read it, then `harness project allow {file.parent}` and `harness reload`"
    )


def unapproved_files(config: Config, approvals: Mapping[str, str]) -> tuple[Path, ...]:
    """The project files of ``config`` whose bytes, as the loader read them, are not the approved
    ones (the digest is of what was parsed, never of a second read: no swap in between counts)."""
    folders = {upstream.project for upstream in config.upstreams.values() if upstream.project is not None}
    files = sorted((folder / PROJECT_FILE).resolve() for folder in folders)
    return tuple(file for file in files if approvals.get(str(file)) != config.project_digests.get(file))


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
