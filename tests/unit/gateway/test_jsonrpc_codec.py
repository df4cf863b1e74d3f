"""The wire's JSON: orjson where it reads and writes the same as the standard library, the standard
library where it would not (long integers, lone surrogates, refusals and their reasons)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gateway.wire import jsonrpc

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # lone surrogates included
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_line_reads_as_the_standard_library_reads_it(value):
    for line in (
        json.dumps(value).encode(),
        json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ):
        try:
            expected = json.loads(line.decode())
        except UnicodeDecodeError:
            with pytest.raises(jsonrpc.NotJSON, match="not valid UTF-8"):
                jsonrpc.parse(line)
            continue
        got = jsonrpc.parse(line)
        assert got == expected
        assert json.dumps(got) == json.dumps(expected)  # same types: an int stays an int


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=4))
def test_what_is_written_reads_back_the_same_and_upstream_bound_lines_are_ascii(message):
    line = jsonrpc.encode(message)
    assert line.endswith(b"\n")
    assert json.loads(line.decode("utf-8", "surrogatepass")) == message
    ascii_line = jsonrpc.encode_ascii(message)
    assert ascii_line.isascii() and ascii_line.endswith(b"\n")
    assert json.loads(ascii_line) == message


def test_an_integer_past_64_bits_stays_exact():
    big = 2**70 + 1
    line = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % big
    assert jsonrpc.parse(line)["id"] == big
    assert jsonrpc.encode({"id": big}) == b'{"id":%d}\n' % big


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"a":NaN}', "NaN is not a JSON number"),
        (b'{"a":-Infinity}', "-Infinity is not a JSON number"),
        (b'{"a":"\xff"}', "not valid UTF-8"),
        (b"{not json", "not JSON (Expecting property name enclosed in double quotes"),
        (b"[" * 200 + b"]" * 200, "nested deeper than 128 levels"),
        (b"[" * 2000 + b"]" * 2000, "nested deeper than 128 levels"),
    ],
)
def test_refusals_keep_their_reasons(line, reason):
    with pytest.raises(jsonrpc.NotJSON) as refused:
        jsonrpc.parse(line)
    assert reason in refused.value.reason


def test_a_lone_surrogate_escape_is_standard_json_and_is_accepted():
    assert jsonrpc.parse(b'{"text":"\\ud800"}') == {"text": "\ud800"}
    assert jsonrpc.encode_ascii({"text": "\ud800"}) == b'{"text":"\\ud800"}\n'
