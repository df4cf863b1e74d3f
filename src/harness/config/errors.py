"""The one error type of configuration: a file, a dotted key and a reason."""

from __future__ import annotations

from pathlib import Path


class ConfigError(Exception):
    """Bad configuration: ``str(e)`` is ``"{file}: {key}: {reason}"`` (empty parts are left out).

    The reason never quotes a secret: values read from an env_file are never put in a message.
    """

    file: str
    key: str
    reason: str

    def __init__(self, file: str | Path, key: str, reason: str) -> None:
        self.file = str(file)
        self.key = key
        self.reason = reason
        super().__init__(": ".join(part for part in (self.file, key, reason) if part))

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, str, str]]:
        return (type(self), (self.file, self.key, self.reason))
