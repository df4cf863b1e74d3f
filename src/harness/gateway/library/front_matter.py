"""Markdown files with YAML front matter (``---`` lines around ``key: value`` pairs), as SKILL.md uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_FILE_BYTES = 1 << 20
"""A skill or prompt file larger than this is refused (it would not fit a context window anyway)."""


class LibraryFileError(ValueError):
    """A file that cannot be served; the message names the file and the reason."""


def read_front_matter(path: Path) -> tuple[dict[str, Any], str]:
    """The front matter (``{}`` when the file has none) and the body after it."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LibraryFileError(f"{path}: {size} bytes, more than {MAX_FILE_BYTES}")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LibraryFileError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise LibraryFileError(f"{path}: {exc.strerror or exc}") from None
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        raise LibraryFileError(f"{path}: front matter opened with --- is never closed")
    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise LibraryFileError(f"{path}: front matter is not YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise LibraryFileError(f"{path}: front matter must be a mapping of keys to values")
    return data, "".join(lines[end + 1 :]).lstrip("\n")


def text_field(data: dict[str, Any], key: str, path: Path, *, required: bool) -> str:
    """A front-matter string field (stripped); LibraryFileError if required and missing or not text."""
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LibraryFileError(f"{path}: front matter needs {key!r}, a non-empty string")
    return value.strip()
