"""Side-loaded prompts: each ``*.md`` file in a ``[mcp] prompt_paths`` folder is one MCP prompt, served
as ``harness__<file stem>`` (the gateway's reserved namespace, which no upstream key may take).

Optional front matter: ``description``, and ``arguments`` — a list of ``{name, description,
required}``. ``prompts/get`` returns the body as one user message, each ``{{argument}}`` replaced by
the argument's value (a missing optional argument by nothing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.gateway.library.front_matter import LibraryFileError, read_front_matter, text_field

log = logging.getLogger("harness.prompts")

PROMPT_PREFIX = "harness__"
_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")


class PromptError(ValueError):
    """A ``prompts/get`` that cannot be answered (unknown prompt, missing argument)."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """One side-loaded prompt."""

    name: str
    description: str
    arguments: tuple[dict[str, Any], ...]
    body: str

    def listed(self) -> dict[str, Any]:
        """Its ``prompts/list`` entry."""
        entry: dict[str, Any] = {"name": self.name, "arguments": list(self.arguments)}
        if self.description:
            entry["description"] = self.description
        return entry

    def render(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Its ``prompts/get`` result for these argument values; PromptError if a required one is
        missing or a value is not a string."""
        for arg in self.arguments:
            value = values.get(arg["name"])
            if value is None and arg.get("required"):
                raise PromptError(f"prompt {self.name!r} needs argument {arg['name']!r}")
            if value is not None and not isinstance(value, str):
                raise PromptError(f"prompt {self.name!r}: argument {arg['name']!r} must be a string")
        text = _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1)) or ""), self.body)
        result: dict[str, Any] = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        if self.description:
            result["description"] = self.description
        return result


def _arguments(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], ...]:
    raw = data.get("arguments", [])
    if not isinstance(raw, list):
        raise LibraryFileError(f"{path}: 'arguments' must be a list of {{name, description, required}}")
    found: list[dict[str, Any]] = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise LibraryFileError(f"{path}: each argument needs a 'name' string")
        if not isinstance(item.get("required", False), bool):
            raise LibraryFileError(f"{path}: argument {item['name']!r}: 'required' must be true or false")
        arg: dict[str, Any] = {"name": item["name"], "required": item.get("required", False)}
        if isinstance(item.get("description"), str):
            arg["description"] = item["description"]
        found.append(arg)
    return tuple(found)


class PromptLibrary:
    """The prompts of some folders; ``problems`` says which files were left out and why."""

    def __init__(self, paths: Sequence[Path] = ()) -> None:
        self.prompts: dict[str, Prompt] = {}
        self.problems: list[str] = []
        for root in paths:
            if not root.is_dir():
                self.problems.append(f"{root}: not a folder")
                continue
            for file in sorted(root.glob("*.md")):
                self._add(file)
        for problem in self.problems:
            log.warning("prompt left out: %s", problem)

    def _add(self, file: Path) -> None:
        if not _STEM.match(file.stem) or "__" in file.stem:
            self.problems.append(f"{file}: a prompt file name is letters, digits, - and _ (no __), ≤ 41")
            return
        name = PROMPT_PREFIX + file.stem
        if name in self.prompts:
            self.problems.append(f"{file}: a prompt named {name!r} was already read from another folder")
            return
        try:
            data, body = read_front_matter(file)
            description = text_field(data, "description", file, required=False)
            arguments = _arguments(data, file)
        except LibraryFileError as exc:
            self.problems.append(str(exc))
            return
        self.prompts[name] = Prompt(name, description, arguments, body)

    def listed(self) -> list[dict[str, Any]]:
        """The ``prompts/list`` array."""
        return [p.listed() for p in self.prompts.values()]

    def get(self, name: Any, arguments: Any) -> dict[str, Any]:
        """The ``prompts/get`` result; PromptError for an unknown name or bad arguments."""
        prompt = self.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise PromptError(f"no prompt named {name!r}; prompts/list shows the names")
        if arguments is not None and not isinstance(arguments, dict):
            raise PromptError("prompts/get params.arguments must be an object of strings")
        return prompt.render(arguments or {})
