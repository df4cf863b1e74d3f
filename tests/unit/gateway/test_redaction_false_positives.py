"""Redaction's false positives on real tool arguments (issue 10: under 1 %) and its per-family
samples: each credential family is caught, each look-alike an agent sends for work is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.benign_args import benign_arguments, credential_properties
from harness.gateway.evidence.redaction import REDACTED, redact_text, redact_value, redacted_args, secret_key
from harness.sample_store import load_catalogs

CATALOGS = Path(__file__).parents[4] / "shared" / "data" / "tool-catalogs"

TRUE_POSITIVES = {
    "github": "ghp_" + "a1B2c3D4e5" * 4,
    "github fine-grained": "github_pat_" + "11ABCDEFG0" * 4,
    "gitlab": "glpat-" + "x1Y2z3W4v5" * 2,
    "aws": "AKIA" + "ABCDEFGHIJ234567",
    "slack": "xoxb-1234567890-abcdefghij",
    "openai": "sk-proj-" + "a1B2c3D4e5" * 3,
    "anthropic": "sk-ant-api03-" + "a1B2c3D4e5" * 3,
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU",
    "bearer": "Authorization: Bearer abc.def-123_456",
    "basic": "Authorization: Basic dXNlcjpwYXNz",
    "url": "postgres://admin:hunter2@db.internal:5432/app",
    "env": "export STRIPE_SECRET_KEY=rk_live_abcdef",
    "prose": "my password is Tr0ub4dor",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
}
FALSE_POSITIVES = {
    "issue key": "issue_key=PROJ-123",
    "page token": "nextPageToken: CAUQAA",
    "prose about a token": "the token is returned in the response header",
    "basic as a word": "basic formatting only",
    "mkdir -p": "mkdir -p build/out",
    "sk- in a word": "risk-assessment",
    "url without credentials": "https://example.com/a:b",
}


@pytest.mark.parametrize("family", sorted(TRUE_POSITIVES))
def test_each_credential_family_is_redacted(family):
    text = TRUE_POSITIVES[family]
    assert REDACTED in redact_text(text), family


@pytest.mark.parametrize("sample", sorted(FALSE_POSITIVES))
def test_each_look_alike_is_kept(sample):
    assert redact_text(FALSE_POSITIVES[sample]) == FALSE_POSITIVES[sample]


KEYS = {
    **dict.fromkeys(["password", "DB_PASSWORD", "stripe_key", "session", "apiKey"], True),
    **dict.fromkeys(
        ["issue_key", "project_key", "max_passages", "author", "nextPageToken", "sessionId", "key"], False
    ),
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_secret_keys_and_identifier_keys(key):
    assert secret_key(key) is KEYS[key]


def test_booleans_under_secret_looking_keys_are_kept():
    assert redact_value({"confirmSecretExposure": True, "password": None}) == {
        "confirmSecretExposure": True,
        "password": None,
    }


@pytest.mark.skipif(not CATALOGS.is_dir(), reason="shared/data/tool-catalogs is not beside the repository")
def test_false_positives_on_benign_arguments_of_54_real_catalogues_are_under_1_percent():
    catalogs = load_catalogs(str(CATALOGS))
    corpus = list(benign_arguments(catalogs))
    changed = [args for args in corpus if json.loads(redacted_args(args)) != args]
    assert len(corpus) > 1000
    assert len(changed) / len(corpus) < 0.01, changed[:5]
    assert len(credential_properties(catalogs)) >= 5  # password/secret properties exist and are redacted
