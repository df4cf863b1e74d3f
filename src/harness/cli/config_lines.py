"""Where a dotted configuration key is set in a file (best effort, for line hints)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def key_line(file: Path, key: str) -> int | None:
    """Best effort: the line of ``file`` that sets the dotted ``key`` (else its table's header)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    parts = re.sub(r"\[\d+\]", "", key).split(".")
    headers: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if (match := _HEADER.match(line)) is not None:
            headers.setdefault(match.group(1).replace('"', "").replace(" ", ""), number)
    for cut in range(len(parts), 0, -1):
        start = headers.get(".".join(parts[:cut]))
        if start is None:
            continue
        if cut == len(parts):
            return start
        setting = re.compile(rf'^\s*"?{re.escape(parts[cut])}"?\s*=')
        for number in range(start + 1, len(lines) + 1):
            if _HEADER.match(lines[number - 1]):
                break
            if setting.match(lines[number - 1]):
                return number
        return start
    return None


def declaring_file(files: Iterable[Path], table: str) -> Path | None:
    """The first of ``files`` with the header ``[table]`` (e.g. ``mcp.git``), else None."""
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            match = _HEADER.match(line)
            if match is not None and match.group(1).replace('"', "").replace(" ", "") == table:
                return file
    return None
