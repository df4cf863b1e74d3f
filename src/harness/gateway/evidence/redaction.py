"""Pattern-based redaction of call arguments before they are recorded (ADR-0035 call_log_args)."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

ARGS_CAP_BYTES = 4096
REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(?i)(pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|auth(orization)?|credential|"
    r"private[_-]?key|access[_-]?key|cookie|session|client[_-]?secret|bearer|(^|[_-])key$)"
)
"""A key (JSON object key) whose value is replaced whatever it looks like."""

_ASSIGNED_NAME = (
    r"[\w.-]*?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|credential|"
    r"private[_-]?key|access[_-]?key|_key)"
)
"""The name in ``NAME=value`` / ``"NAME": "value"`` text: any prefix (``DB_PASSWORD``,
``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``STRIPE_KEY``) ending in a secret word."""

_SECRET_VALUE = re.compile(
    "|".join(
        (
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
            r"\bgithub_pat_[A-Za-z0-9_]{30,}\b",
            r"\bglpat-[A-Za-z0-9_-]{20,}\b",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",
            r"\bsk-(ant-)?[A-Za-z0-9_-]{20,}\b",
            r"\bAIza[0-9A-Za-z_-]{35}\b",
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b",
            r"\bbearer\s+[A-Za-z0-9._~+/=-]{8,}",
            r"\bbasic\s+[A-Za-z0-9+/=]{8,}",
            # NAME=value, NAME: value, "NAME": "value" (a JSON object inside a string too)
            rf"\b{_ASSIGNED_NAME}[\"']?\s*[=:]\s*(?:\"[^\"]*\"|'[^']*'|[^\s&,;\"'}}]+)",
            # "my password is hunter2", "the token was abc"
            r"\b(?:password|passphrase|passwd|token|secret)\s+(?:is|was|=)\s+\S+",
            # mysql -pSECRET, mysqldump --password=SECRET (the option glued to its value)
            r"(?<=\s)-p(?!\s)\S+(?=.*\bmysql)|\bmysql(?:dump|admin)?\b[^\n]*?\s-p(?!\s)\S+",
        )
    ),
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@")


def redact_text(text: str) -> str:
    """Replace secret-looking substrings of a string."""
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _SECRET_VALUE.sub(REDACTED, text)


def redact_value(value: Any) -> Any:
    """A copy of a JSON value with secret-named keys' values and secret-looking strings replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact_value(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def cap_utf8(text: str, limit: int = ARGS_CAP_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, marked when cut."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    marker = "…[truncated]"
    keep = limit - len(marker.encode())
    return raw[:keep].decode(errors="ignore") + marker


_MARKERS = (
    "://",
    "-----begin",
    "akia",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk-",
    "aiza",
    "eyj",
    "bearer",
    "pass",
    "secret",
    "token",
    "key",
    "pwd",
    "session",
    "mysql",
    "basic",
    "auth",
    "credential",
    "cookie",
)
"""Every pattern above matches only text holding one of these (lower-cased): a cheap pre-check."""

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)


def canonical_json(arguments: Any) -> str:
    """The canonical JSON of interfaces.md: sorted keys, compact separators, UTF-8 kept."""
    return _CANONICAL.encode(arguments)


def may_hold_secret(text: str) -> bool:
    """False when no redaction pattern can match ``text`` (the common case, decided in ~1 µs)."""
    low = text.lower()
    return any(marker in low for marker in _MARKERS)


class SecretFinder(Protocol):
    """Finds the exact secret values the daemon holds (``known_secrets.KnownSecrets``)."""

    def found_in(self, text: str) -> bool:
        """Whether one occurs in ``text``."""
        ...

    def redact(self, text: str, marker: str) -> str:
        """``text`` with each occurrence replaced by ``marker``."""
        ...


def redacted_args(arguments: Any, canonical: str | None = None, known: SecretFinder | None = None) -> str:
    """Arguments as stored under ``call_log_args = "redacted"``: redacted canonical JSON, ≤ 4 KiB.

    Layers: the daemon's own secret values first (``known``, in any encoding), then secret-named
    keys and secret-looking strings. ``canonical`` (the arguments' canonical JSON, if already made)
    lets the common case, nothing to redact, skip the walk: one scan of the text decides.
    """
    text = canonical if canonical is not None else canonical_json(arguments)
    if known is not None and known.found_in(text):
        arguments = json.loads(known.redact(text, REDACTED))
        text = canonical_json(arguments)
    if may_hold_secret(text):
        text = canonical_json(redact_value(arguments))
    return cap_utf8(text)
