"""``harness completion bash|zsh``: a shell completion script for the whole command line, written by
``shtab`` from the same argparse parser the commands run with (so it never lags behind them)."""

from __future__ import annotations

import argparse
from typing import Any

SHELLS = ("bash", "zsh")


def add_parser(sub: Any, epilog: str) -> None:
    """The ``completion`` subcommand."""
    completion = sub.add_parser(
        "completion",
        help='print a completion script: eval "$(harness completion bash)" (or zsh)',
        epilog=epilog,
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell the script is for")


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell``; options that take a file or a folder
    complete paths."""
    import shtab

    _mark_paths(parser, {"FILE": shtab.FILE, "DIR": shtab.DIRECTORY})
    text: str = shtab.complete(parser, shell=shell)
    return text


def _mark_paths(parser: argparse.ArgumentParser, by_metavar: dict[str, Any]) -> None:
    """Tell shtab which options take a path: those whose metavar is ``FILE`` or ``DIR``."""
    for action in parser._actions:
        if isinstance(action.metavar, str) and action.metavar in by_metavar:
            action.complete = by_metavar[action.metavar]  # type: ignore[attr-defined]  # read by shtab
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _mark_paths(child, by_metavar)
