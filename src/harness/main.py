"""``harness``: the command line. ``harness mcp`` is dispatched before anything else is imported."""

from __future__ import annotations

import sys


def _take_global(argv: list[str]) -> tuple[list[str], dict[str, str | bool]]:
    """Pull ``--config``, ``--state-dir`` and ``--debug`` from anywhere on the command line."""
    rest: list[str] = []
    opts: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key = arg.split("=", 1)[0]
        if key in ("--config", "--state-dir"):
            if "=" in arg:
                opts[key[2:]] = arg.split("=", 1)[1]
            elif i + 1 < len(argv):
                opts[key[2:]] = argv[i + 1]
                i += 1
            else:
                rest.append(arg)  # let argparse report the missing value
        elif arg == "--debug":
            opts["debug"] = True
        else:
            rest.append(arg)
        i += 1
    return rest, opts


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``harness`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    rest, opts = _take_global(args)
    if rest[:1] == ["mcp"] and not ({"-h", "--help"} & set(rest)):
        from harness.cli import bridge

        state = opts.get("state-dir")
        return bridge.run(state if isinstance(state, str) else None)
    from harness.cli.commands import dispatch
    from harness.demo import run as demo

    return dispatch(rest, opts, {"demo": demo.command})


if __name__ == "__main__":
    sys.exit(main())
