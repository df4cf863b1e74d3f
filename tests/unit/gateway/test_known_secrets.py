"""The first redaction layer: the exact secret values the daemon holds, in every form they travel."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from harness.config import load_config
from harness.gateway.evidence.known_secrets import KnownSecrets, encodings
from harness.gateway.evidence.redaction import redacted_args

SECRET = "zz-UPSTREAM/SECRET+42=ok"


@pytest.mark.parametrize(
    "form",
    [
        SECRET,
        base64.b64encode(SECRET.encode()).decode(),
        base64.b64encode(SECRET.encode()).decode().rstrip("="),
        base64.urlsafe_b64encode(SECRET.encode()).decode(),
        SECRET.encode().hex(),
        SECRET.encode().hex().upper(),
        quote(SECRET, safe=""),
    ],
)
def test_a_known_secret_in_any_form_at_any_depth_in_keys_or_values_is_not_stored(form):
    known = KnownSecrets([SECRET])
    arguments = {"a": {"b": [{"c": f"the value is {form}!"}]}, form: "as a key", "plain": "kept"}
    stored = redacted_args(arguments, None, known)
    assert form not in stored and SECRET not in stored
    assert json.loads(stored)["plain"] == "kept"


def test_short_values_are_not_secrets_and_every_form_is_generated():
    assert KnownSecrets(["1", "true"]).found_in("1 true") is False
    forms = encodings(SECRET)
    assert {SECRET, SECRET.encode().hex(), base64.b64encode(SECRET.encode()).decode()} <= forms


def test_every_env_file_value_of_every_upstream_is_known_referenced_or_not(tmp_path):
    (tmp_path / "up.env").write_text("TOKEN=referenced-secret-1\nUNUSED=unreferenced-secret-2\n")
    (tmp_path / "harness.toml").write_text(
        '[mcp.up]\nargv = ["x"]\nenv_file = "up.env"\nenv = { T = "${TOKEN}" }\n'
        '[mcp.web]\nurl = "http://127.0.0.1:1/mcp"\nenv_file = "up.env"\n'
        'headers = { Authorization = "Bearer ${TOKEN}" }\n'
    )
    known = KnownSecrets.of(load_config(tmp_path / "harness.toml"))
    for text in ("referenced-secret-1", "unreferenced-secret-2", "Bearer referenced-secret-1"):
        assert known.found_in(f"x {text} y")
