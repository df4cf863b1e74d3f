"""Redaction of recorded arguments (call_log_args = "redacted")."""

from __future__ import annotations

import base64
import json

from harness.gateway.evidence.args_cap import ARGS_CAP_BYTES
from harness.gateway.evidence.recording import args_hash
from harness.gateway.evidence.redaction import encoded_secrets, may_hold_secret, redacted_args

SECRETS = [
    "ghp_" + "a1B2" * 9,
    "sk-ant-" + "x" * 40,
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


def test_secret_looking_values_are_absent_from_the_stored_arguments():
    for secret in SECRETS:
        stored = redacted_args({"query": f"use {secret} please", "nested": [{"note": secret}]})
        assert secret not in stored
        assert "[REDACTED]" in stored


def test_values_under_secret_named_keys_are_replaced_whatever_they_look_like():
    stored = json.loads(
        redacted_args({"password": "hunter2", "Api-Key": "plain", "headers": {"Authorization": "x"}})
    )
    assert stored == {
        "password": "[REDACTED]",
        "Api-Key": "[REDACTED]",
        "headers": {"Authorization": "[REDACTED]"},
    }


def test_credentials_in_urls_and_key_value_text_are_replaced():
    stored = redacted_args({"url": "https://bob:s3cret@example.com/x", "cmd": "run --token=abc123 now"})
    assert "s3cret" not in stored and "abc123" not in stored
    assert "https://[REDACTED]@example.com/x" in stored


def test_ordinary_arguments_are_kept_as_canonical_json():
    assert redacted_args({"b": 1, "a": "hello world"}) == '{"a":"hello world","b":1}'


def test_stored_arguments_are_capped_at_4_kib_on_a_character_boundary():
    stored = redacted_args({"text": "é" * 10_000})
    assert len(stored.encode()) <= ARGS_CAP_BYTES
    assert json.loads(stored)["text"].endswith("…[truncated]")


def test_args_hash_is_sha256_of_the_canonical_json():
    assert args_hash({"b": 1, "a": "é"}) == args_hash({"a": "é", "b": 1})
    assert len(args_hash({})) == 64


def test_the_marker_pre_check_never_skips_text_a_pattern_would_redact():
    from harness.gateway.evidence.redaction import _ASSIGNED_MARKERS, may_hold_secret, redact_text, secret_key
    from harness.gateway.evidence.secret_patterns import MARKERS, PATTERNS

    for pattern in PATTERNS:
        assert any(any(m in marker for m in MARKERS) for marker in pattern.markers), pattern.markers
    assert all(any(m in marker for m in MARKERS) for marker in _ASSIGNED_MARKERS)
    samples = [
        *SECRETS,
        "https://u:p@h/x",
        "password=x1",
        "Bearer abcdefghij",
        "-----BEGIN RSA PRIVATE KEY-----",
        "curl -u a:b https://h",
        "sshpass -p x ssh h",
        "Cookie: sid=x",
    ]
    for text in samples:
        assert redact_text(text) != text, text
        assert may_hold_secret(text), text
    for key in [
        "session_key",
        "client-secret",
        "Private-Key",
        "ACCESS_KEY",
        "Cookie",
        "Authorization",
        "apikey",
    ]:
        assert secret_key(key), key
        assert may_hold_secret(key), key
    assert not may_hold_secret('{"text":"hello world","n":3}')


def test_an_encoded_secret_is_found_however_its_decoding_is_made_and_random_bytes_are_kept():
    secret = "ghp_" + "a1B2" * 9
    with_replacement_char = base64.b64encode(f"\ufffd {secret}".encode()).decode()  # a U+FFFD of its own
    broken = base64.b64encode(b"\xff" + secret.encode()).decode()  # not UTF-8: not an encoded string
    path = "src/harness/gateway/upstream/transports/stdio"
    assert encoded_secrets(f'{{"v":"{with_replacement_char}"}}')[0] == {with_replacement_char}
    assert encoded_secrets(f'{{"v":"{broken}","p":"{path}"}}')[0] == frozenset()
    assert secret not in redacted_args({"v": base64.b64encode(secret.encode()).decode()})
    # the marker pre-check finds every marker, wherever it is, and nothing else
    for text in ("x-api-KEY: 1", "aaaaaaaaaaaaaaaaauth", "sk-" + "a" * 5, "-----BEGIN", "ghu_", "a://b"):
        assert may_hold_secret(text), text
    for text in ("hello world", "a" * 64, "gh_p", "s-k", "xo", "src/harness/gateway"):
        assert not may_hold_secret(text), text


def test_a_benign_encoded_looking_run_that_recurs_is_decoded_once_and_a_secret_one_is_never_remembered(
    monkeypatch,
):
    from harness.gateway.evidence import redaction

    decoded: list[str] = []
    b64decode = base64.b64decode

    def counting(run, *args, **kwargs):
        decoded.append(run)
        return b64decode(run, *args, **kwargs)

    monkeypatch.setattr(redaction.base64, "b64decode", counting)
    path = "src/harness/gateway/upstream/transports/recurring"  # a run: kept
    secret = base64.b64encode(("ghp_" + "c3D4" * 9).encode()).decode()  # a run: redacted
    for i in range(5):
        assert encoded_secrets(f'{{"i":{i},"p":"{path}","s":"{secret}"}}')[0] == {secret}
    assert sum(1 for run in decoded if run.startswith("src/")) == 1, decoded  # the path: once
    assert sum(1 for run in decoded if run == secret) == 5, decoded  # the secret: every time
    assert not any("ghp_" in run or run == secret for run in redaction._BENIGN_RUNS)
