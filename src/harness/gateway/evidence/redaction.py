"""Pattern-based redaction of call arguments before they are recorded (ADR-0035 call_log_args)."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple, Protocol

ARGS_CAP_BYTES = 4096
REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(?i)(password|passwd|passphrase|(^|[_-])pass($|[_-])|pwd|secret|token|api[_-]?key|apikey|"
    r"auth(orization|entication)?($|[_-])|credential|private[_-]?key|access[_-]?key|cookie|^session$|"
    r"client[_-]?secret|bearer|[_-]key$)"
)
"""A key (JSON object key) whose string or number value is replaced whatever it looks like."""

_IDENTIFIER_KEY = re.compile(
    r"(?i).*(issue|project|epic|parent|label|sort|partition|primary|foreign|row|object|cache|"
    r"idempotency|group|field|column|attribute|property|item|record|entry|node|lookup|map|bucket|"
    r"hot|space|short(cut)?)[_-]?key|.*(page|continuation|next|prev(ious)?|sync|cursor|pagination|resume)"
    r"[_-]?token"
)
"""Keys the rule above matches that name an identifier, not a credential (``issue_key``,
``project_key``, ``nextPageToken``): their values are kept. Measured on the benign corpus of
:mod:`harness.testing.benign_args` (bench/redaction.py)."""


def secret_key(name: str) -> bool:
    """Whether a JSON object key names a credential (its value is replaced)."""
    return _SECRET_KEY.search(name) is not None and _IDENTIFIER_KEY.fullmatch(name) is None


_ASSIGNED_NAME = re.compile(
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|credential|private[_-]?key|"
    r"access[_-]?key|_key)$",
    re.IGNORECASE,
)
"""The end of NAME in ``NAME=value``, ``NAME: value``, ``"NAME": "value"`` (a JSON object inside a
string too): any prefix (``DB_PASSWORD``, ``GITHUB_TOKEN``, ``STRIPE_KEY``) ending in a secret word.
Such text is found from its ``=``/``:`` (few in prose), NAME read backwards from there, and the whole
replaced when :func:`secret_key` says NAME is a credential."""
_SEPARATOR = re.compile(r"[=:]")
_ASSIGNED_VALUE = re.compile(r"\s*(?:\"[^\"]*\"|'[^']*'|[^\s&,;\"'}]+)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_NOT_A_VALUE = (
    r"(?:not|never|the|a|an|only|also|then|used|sent|stored|returned|exposed|required|optional|valid|"
    r"invalid|expired|missing|set|provided|needed|passed|generated|created|given|being|empty|correct|"
    r"wrong|incorrect|too|sensitive|encrypted|hashed|saved|available|weakly|removed|revoked|rotated)"
)
"""Words after "password is" / "the token was" that describe it rather than give it."""

_I = re.IGNORECASE
_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("-----begin",),
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
    ),
    (("akia",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b")),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    (("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),
    (("sk-",), re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{20,}\b")),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    (("bearer",), re.compile(r"\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", _I)),
    (("basic",), re.compile(r"\bbasic\s+(?=(?-i:[A-Za-z0-9+/]*[A-Z0-9+/]))[A-Za-z0-9+/]{8,}={0,2}", _I)),
    # "my password is hunter2", "the token was abc"
    (
        ("password", "passphrase", "passwd", "token", "secret"),
        re.compile(
            rf"\b(?:password|passphrase|passwd|token|secret)\s+(?:is|was|=)\s+(?!{_NOT_A_VALUE}\b)\S+", _I
        ),
    ),
    # mysql -pSECRET, mysqldump --password=SECRET (the option glued to its value)
    (
        ("mysql",),
        re.compile(r"(?<=\s)-p(?!\s)\S+(?=.*\bmysql)|\bmysql(?:dump|admin)?\b[^\n]*?\s-p(?!\s)\S+", _I),
    ),
)
"""Credential formats, each run only when its markers (lower-cased) occur in the text: a regex scan
costs ~70 µs per 4 KiB, a substring test well under 1 µs. Vendor formats are case-sensitive."""
_ASSIGNED_MARKERS = ("pass", "pwd", "secret", "token", "key", "credential")
_URL_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


class _Scan(NamedTuple):
    """Which pattern groups can match, decided once from the markers in a text."""

    url: bool
    patterns: tuple[re.Pattern[str], ...]
    assignments: bool


def _scan_for(text: str) -> _Scan:
    low = text.lower()
    return _Scan(
        "://" in low,
        tuple(pattern for markers, pattern in _PATTERNS if any(marker in low for marker in markers)),
        any(marker in low for marker in _ASSIGNED_MARKERS),
    )


def redact_text(text: str, scan: _Scan | None = None) -> str:
    """Replace secret-looking substrings of a string (``scan``: decided from a text holding it)."""
    scan = scan or _scan_for(text)
    if scan.url:
        text = _URL_CREDENTIALS.sub(f"://{REDACTED}@", text)
    for pattern in scan.patterns:
        text = pattern.sub(REDACTED, text)
    if scan.assignments:
        text = _redact_assignments(text)
    return text


def _redact_assignments(text: str) -> str:
    out: list[str] = []
    kept = 0
    for separator in _SEPARATOR.finditer(text):
        at = end = separator.start()
        if at < kept:
            continue
        while end > kept and text[end - 1] in " \t":
            end -= 1
        if end > kept and text[end - 1] in "\"'":
            end -= 1
        start = end
        while start > kept and text[start - 1] in _NAME_CHARS:
            start -= 1
        name = text[start:end]
        if not _ASSIGNED_NAME.search(name) or not secret_key(name):
            continue
        value = _ASSIGNED_VALUE.match(text, at + 1)
        if value is not None:
            out += (text[kept:start], REDACTED)
            kept = value.end()
    return "".join(out) + text[kept:] if out else text


def redact_value(value: Any, scan: _Scan | None = None) -> Any:
    """A copy of a JSON value with secret-named keys' values and secret-looking strings replaced
    (``scan``: decided once from the value's whole JSON text, else per string)."""
    if isinstance(value, dict):
        return {
            k: (
                REDACTED
                if isinstance(k, str) and not isinstance(v, bool) and v is not None and secret_key(k)
                else redact_value(v, scan)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v, scan) for v in value]
    if isinstance(value, str):
        return redact_text(value, scan)
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
        text = canonical_json(redact_value(arguments, _scan_for(text)))
    return cap_utf8(text)
