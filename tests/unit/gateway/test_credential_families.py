"""Each credential family (devtools.credentials): redacted plain, nested at random depths,
as an object key and encoded; its near misses kept; values under secret-named keys replaced."""

from __future__ import annotations

import json
import random

import pytest

from devtools.credentials import CREDENTIAL_FAMILIES, ENCODINGS, SECRET_NAMED_KEYS, secret_part
from harness.gateway.evidence.redaction import REDACTED, canonical_json, redacted_args

SECRETS = [(family, secret) for family, f in CREDENTIAL_FAMILIES.items() for secret in f.secrets]
NEAR_MISSES = [(family, text) for family, f in CREDENTIAL_FAMILIES.items() for text in f.near_misses]


def nested(value, rng: random.Random, as_key: bool):
    holder = {value: rng.randrange(100)} if as_key else {"text": f"see {value} here"}
    for _ in range(rng.randrange(1, 8)):
        holder = rng.choice([{"k": holder}, [holder], {"items": [1, holder, "x"]}])
    return holder


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize(("family", "secret"), SECRETS)
def test_a_credential_is_absent_however_deep_in_keys_or_values_and_however_encoded(family, secret, encoding):
    rng = random.Random(f"{family}{secret}{encoding}")
    shown = ENCODINGS[encoding](secret)
    for as_key in (False, True):
        stored = redacted_args(nested(shown, rng, as_key))
        assert secret_part(secret) not in stored and shown not in stored, (family, encoding, stored)
        assert REDACTED in stored


@pytest.mark.parametrize(("family", "text"), NEAR_MISSES)
def test_a_near_miss_is_kept_as_is(family, text):
    args = {"note": text, "nested": [{"q": text}]}
    assert redacted_args(args) == canonical_json(args), family


@pytest.mark.parametrize("key", SECRET_NAMED_KEYS)
def test_a_value_under_a_secret_named_key_is_replaced_whatever_it_looks_like(key):
    value = "".join(random.Random(key).choice("abcdefXYZ0123456789") for _ in range(32))
    assert json.loads(redacted_args({"deep": [{key: value}]})) == {"deep": [{key: REDACTED}]}
