"""``harness completion bash|zsh``: the script a shell loads, made from the parser the commands run
with; bash is run for real, with the script sourced and its completion function called."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

BASH = shutil.which("bash")


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60, check=False
    )


def _bash_completes(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` with ``script`` sourced."""
    assert BASH is not None
    program = (
        'source /dev/stdin; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; '
        'COMP_POINT=${#COMP_LINE}; _shtab_harness; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        [BASH, "-c", program, "bash", *words], input=script, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def bash_script() -> str:
    done = _harness("completion", "bash")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_bash_completes_a_subcommand_from_its_first_letters(bash_script):
    assert sorted(_bash_completes(bash_script, ["harness", "sta"])) == ["start", "status"]
    assert _bash_completes(bash_script, ["harness", "policy", ""]) == ["what-if"]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_bash_completes_an_option_of_a_subcommand_and_a_file_for_a_file_option(bash_script, tmp_path):
    assert "--follow" in _bash_completes(bash_script, ["harness", "calls", "--fo"])
    (tmp_path / "proposal.toml").write_text("")
    offered = _bash_completes(
        bash_script, ["harness", "policy", "what-if", "--policy", str(tmp_path / "prop")]
    )
    assert offered == [str(tmp_path / "proposal.toml")]


def test_the_zsh_script_is_a_compdef_for_harness_naming_every_subcommand():
    done = _harness("completion", "zsh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#compdef harness")
    for command in ("daemon", "status", "calls", "tools", "policy", "completion"):
        assert command in done.stdout


def test_an_unknown_shell_is_refused_in_one_usage_line():
    done = _harness("completion", "fish")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "invalid choice: 'fish' (choose from 'bash', 'zsh')" in done.stderr.splitlines()[-1]
