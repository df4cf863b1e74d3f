"""The first layer of redaction: the exact secret values the daemon itself holds.

Every value of every upstream's ``env_file`` (referenced or not) and every resolved header is a known
secret. An agent that was handed one (a prompt injection, a tool that echoes its environment) and
puts it in call arguments must not get it into the store, whatever it looks like: so each value is
matched as it is and as it travels, base64 (standard and URL-safe, with or without padding), hex
(either case), URL-encoded, and JSON-escaped, before any pattern runs.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from harness.config import Config, ConfigError, parse_env_file, resolve_upstream_headers
from harness.gateway.evidence.secret_patterns import REDACTED

log = logging.getLogger(__name__)

MIN_SECRET_CHARS = 6
"""Shorter values (``1``, ``true``, a port) are not treated as secrets: they would redact everywhere."""


def encodings(secret: str) -> set[str]:
    """The forms a secret takes in text: as is, base64/base64url (padded or not), hex, URL-encoded,
    and JSON-escaped (as it appears inside canonical JSON)."""
    raw = secret.encode()
    hexed = binascii.hexlify(raw).decode()
    forms = {secret, quote(secret, safe=""), quote_plus(secret), hexed, hexed.upper()}
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms.update((encoded, encoded.rstrip("=")))
    forms.update({json.dumps(form, ensure_ascii=False)[1:-1] for form in list(forms)})
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


def secret_values(config: Config) -> set[str]:
    """Every env_file value and resolved header of every upstream (unreadable files are skipped:
    the upstream cannot start with them either)."""
    values: set[str] = set()
    for upstream in config.upstreams.values():
        try:
            if upstream.env_file is not None:
                values.update(parse_env_file(upstream.env_file).values())
            values.update(resolve_upstream_headers(upstream).values())
        except ConfigError as exc:
            log.warning("known secrets: %s", exc)
    return {value for value in values if len(value) >= MIN_SECRET_CHARS}


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching any of ``words`` (the longest at a position), with common prefixes factored
    out: a flat alternation of hundreds of literals costs ~10x more per scanned character."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _node_pattern(trie)


def _node_pattern(node: dict[str, Any]) -> str:
    out = []
    while True:  # a chain of single children is a literal run: no recursion (secrets may be long)
        chars = sorted(char for char in node if char)
        optional = "" in node
        if len(chars) == 1 and not optional:
            out.append(re.escape(chars[0]))
            node = node[chars[0]]
            continue
        if chars:
            branches = "|".join(re.escape(char) + _node_pattern(node[char]) for char in chars)
            out.append(f"(?:{branches})" + ("?" if optional else ""))
        return "".join(out)


class KnownSecrets:
    """Finds and replaces the known secret values in text (one compiled alternation, longest first)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms = sorted({form for secret in secrets for form in encodings(secret)}, key=len, reverse=True)
        self._pattern = re.compile(trie_pattern(forms)) if forms else None

    @classmethod
    def of(cls, config: Config) -> KnownSecrets:
        """The known secrets of a configuration."""
        return cls(secret_values(config))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def found_in(self, text: str) -> bool:
        """Whether any known secret, in any of its forms, occurs in ``text``."""
        return self._pattern is not None and self._pattern.search(text) is not None

    def redact(self, text: str, marker: str) -> str:
        """``text`` with every occurrence of a known secret replaced by ``marker``."""
        return text if self._pattern is None else self._pattern.sub(marker, text)

    def scrub(self, value: Any) -> Any:
        """``value`` (text, or lists and dicts of it as a control answer is) with every known secret
        in every string, keys included, replaced by ``[REDACTED]``."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self._pattern.sub(REDACTED, value)
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub(v) for v in value]
        return value
