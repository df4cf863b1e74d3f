"""The credential formats redaction looks for in free text, and the markers that pre-check them.

Each pattern runs only when one of its markers (lower-cased) occurs in the text: a substring test
is far cheaper than a regex scan (bench/README.md). Vendor formats are case-sensitive. A pattern with
a ``lead`` group keeps that part (the command and its option) and replaces only what follows it."""

from __future__ import annotations

import re
from typing import NamedTuple

REDACTED = "[REDACTED]"

NOT_A_VALUE = (
    r"(?:not|never|the|a|an|only|also|then|used|sent|stored|returned|exposed|required|optional|valid|"
    r"invalid|expired|missing|set|provided|needed|passed|generated|created|given|being|empty|correct|"
    r"wrong|incorrect|too|sensitive|encrypted|hashed|saved|available|weakly|removed|revoked|rotated)"
)
"""Words after "password is" / "the token was" that describe it rather than give it."""

_ARGUMENT = r"(?:\"[^\"]*\"|'[^']*'|[^\s\"']+)"
"""One shell argument: quoted, or up to the next space."""


class SecretPattern(NamedTuple):
    markers: tuple[str, ...]
    pattern: re.Pattern[str]
    replacement: str = REDACTED


def _keeping_lead(markers: tuple[str, ...], pattern: str) -> SecretPattern:
    return SecretPattern(markers, re.compile(pattern, re.IGNORECASE), rf"\g<lead>{REDACTED}")


_I = re.IGNORECASE
PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        ("-----begin",),
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
    ),
    SecretPattern(("akia",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    SecretPattern(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    SecretPattern(("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b")),
    SecretPattern(("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    SecretPattern(("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),
    SecretPattern(("sk-",), re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{20,}\b")),
    SecretPattern(
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ),
    SecretPattern(("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    SecretPattern(("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    SecretPattern(("bearer",), re.compile(r"\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", _I)),
    SecretPattern(
        ("basic",), re.compile(r"\bbasic\s+(?=(?-i:[A-Za-z0-9+/]*[A-Z0-9+/]))[A-Za-z0-9+/]{8,}={0,2}", _I)
    ),
    # "my password is hunter2", "the token was abc"
    SecretPattern(
        ("password", "passphrase", "passwd", "token", "secret"),
        re.compile(
            rf"\b(?:password|passphrase|passwd|token|secret)\s+(?:is|was|=)\s+(?!{NOT_A_VALUE}\b)\S+", _I
        ),
    ),
    # mysql -pSECRET, mysqldump --password=SECRET (the option glued to its value)
    SecretPattern(
        ("mysql",),
        re.compile(r"(?<=\s)-p(?!\s)\S+(?=.*\bmysql)|\bmysql(?:dump|admin)?\b[^\n]*?\s-p(?!\s)\S+", _I),
    ),
    # curl -u admin:s3cret, curl --user admin:s3cret, curl --user=admin:s3cret
    _keeping_lead(("curl",), rf"(?P<lead>\bcurl\b[^\n]*?\s(?:-u\s*|--user(?:=|\s+))){_ARGUMENT}"),
    # sshpass -p hunter22, sshpass -phunter22
    _keeping_lead(("sshpass",), rf"(?P<lead>\bsshpass\b[^\n]*?\s-p\s*){_ARGUMENT}"),
    # a Cookie or Set-Cookie header written as text: its name=value pairs, to the end of the line
    _keeping_lead(("cookie",), r"(?P<lead>\b(?:set-)?cookie[ \t]*:[ \t]*)(?=[^\r\n\"]*=)[^\r\n\"]+"),
)
"""Credential formats found in free text."""

MARKERS = (
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
    "k_live_",
    "k_test_",
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
    "curl",
)
"""Every pattern matches only text holding one of these (lower-cased): a cheap pre-check
(``sshpass`` holds ``pass``)."""
