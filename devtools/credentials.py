"""Samples of each credential family redaction knows, and near misses it must keep (issue 10).

Every family has true positives (made up in the vendor's real format: none is a live credential)
and false positives (text that looks close and is ordinary). ``tests/unit/gateway/
test_credential_families.py`` checks each sample plain, nested at random depths, as an object key
and encoded (base64, base64url, hex, percent-encoding); ``tests/acceptance/test_no_secret_at_rest.py``
byte-searches a real daemon's files for them.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Callable
from typing import NamedTuple


class Family(NamedTuple):
    """One credential format: samples to redact, and look-alikes to keep."""

    secrets: tuple[str, ...]
    near_misses: tuple[str, ...]


CREDENTIAL_FAMILIES: dict[str, Family] = {
    "github": Family(
        (
            "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwx",
        ),
        ("ghp_short", "the ghp_ prefix marks a classic token"),
    ),
    "gitlab": Family(("glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm",), ("glpat-", "set a glpat token in CI")),
    "aws": Family(
        ("AKIAZ7Q3EXAMPLEKEY4X",), ("AKIA is the prefix of an access key id", "akiaqwertyuiopasdfgh")
    ),
    "slack": Family(("xoxb-2048-1024-Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk1",), ("xox is not a token", "xoxo hugs")),
    "stripe": Family(
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "rk_test_51H8q2KZvKYlo2C0aIiLq9Zx"),
        ("sk_live_ keys start like this", "desk_live_view"),
    ),
    "google": Family(("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",), ("AIza prefix", "Aizawa is a surname")),
    "openai": Family(("sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed",), ("sk-learn is a library", "task-list")),
    "anthropic": Family(("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed-Aa",), ("sk-ant is the prefix",)),
    "jwt": Family(
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",),
        ("eyJ starts a base64 JSON object", "a.b.c"),
    ),
    "pem": Family(
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzx9yw8vu7ts6\n-----END RSA PRIVATE KEY-----",),
        ("-----BEGIN CERTIFICATE-----", "a PEM private key block"),
    ),
    "bearer": Family(
        ("Authorization: Bearer Zx9Yw8Vu7Ts6Rq5Po4Nm",), ("the bearer of this letter", "Bearer")
    ),
    "basic": Family(
        ("Authorization: Basic dXNlcjpodW50ZXIyUGFzcw==",), ("basic usage", "Basic auth is weak")
    ),
    "url": Family(
        ("https://deploy:Zx9Yw8Vu7Ts6@git.example.com/repo.git",),
        ("https://example.com/a:b", "mailto:someone@example.com"),
    ),
    "assignment": Family(
        ("DB_PASSWORD=Zx9Yw8Vu7Ts6", "export GITHUB_TOKEN=Zx9Yw8Vu7Ts6Rq5", "my password is Zx9Yw8Vu7"),
        ("the password is required", "token_count=12", "passport=FR"),
    ),
}
"""Families by name (the ADR's list: GitHub, GitLab, AWS, Slack, Stripe, Google, OpenAI/Anthropic,
JWT, PEM, bearer/basic headers, URLs with credentials, and NAME=value assignments)."""

SECRET_NAMED_KEYS: tuple[str, ...] = ("password", "api_key", "client_secret", "X-Api-Key", "refresh_token")
"""Keys whose value is replaced whatever it looks like (a high-entropy value under such a key)."""


def secret_part(secret: str) -> str:
    """What of a sample must not survive redaction: the credential, not the words around it."""
    for lead in ("Bearer ", "Basic ", "=", "is "):
        if lead in secret:
            return secret.rsplit(lead, 1)[1]
    if "://" in secret:
        return secret.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    return secret.splitlines()[1] if secret.startswith("-----") else secret


ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda s: s,
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64url": lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
    "hex": lambda s: s.encode().hex(),
    "percent": lambda s: urllib.parse.quote(s, safe=""),
}
"""The ways an agent may encode a secret it passes on (redaction decodes each)."""
