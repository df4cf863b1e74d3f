"""The writer's fast paths give what the plain ones give: multi-row appends, trusted events, background
WAL checkpoints, the canonical-JSON encoder built once."""

from __future__ import annotations

import json
import threading

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devtools.sample_call import record_sample_call
from harness.events import ToolCallCompleted, encode
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.evidence.redaction import canonical_json
from harness.projections.call_log import TS_SQL, iso_ms
from harness.store import (
    append,
    append_values,
    envelopes_for,
    event_values,
    open_for_writing,
    read_rows,
    transaction,
)
from harness.store.checkpoints import BackgroundCheckpoints
from harness.store.log import ROWS_PER_INSERT


def _recorded(n: int) -> list[ToolCallCompleted]:
    out: list[ToolCallCompleted] = []
    recorder = CallRecorder(out.append, "redacted")  # type: ignore[arg-type]
    for _ in range(n):
        record_sample_call(recorder)
    return out


def test_a_recorded_event_equals_the_validated_event_of_its_fields():
    (event,) = _recorded(1)
    validated = ToolCallCompleted.model_validate(event.model_dump())
    assert event == validated
    assert encode(event) == encode(validated)
    assert list(event.__dict__) == list(ToolCallCompleted.model_fields)
    assert event.model_fields_set == validated.model_fields_set


def test_a_batch_larger_than_one_insert_lands_whole_and_in_order(tmp_path):
    events = _recorded(2 * ROWS_PER_INSERT + 17)
    fast = open_for_writing(tmp_path / "fast.db")
    with transaction(fast) as cursor:
        append_values(cursor, event_values(events, 5))
    plain = open_for_writing(tmp_path / "plain.db")
    with plain:
        append(plain.cursor(), envelopes_for(events, 5))
    rows = list(read_rows(fast, 0))
    assert [r[0] for r in rows] == list(range(5, 5 + len(events)))
    assert rows == list(read_rows(plain, 0))


def test_a_failing_transaction_rolls_back_everything(tmp_path):
    conn = open_for_writing(tmp_path / "harness.db")
    events = _recorded(3)
    try:
        with transaction(conn) as cursor:
            append_values(cursor, event_values(events, 1))
            append_values(cursor, event_values(events[:1], 1))  # position 1 again
    except apsw.ConstraintError:
        pass
    else:
        raise AssertionError("a duplicate position was accepted")
    assert conn.execute("SELECT count(*) FROM events").get == 0
    assert conn.get_autocommit()


def test_checkpoints_run_in_their_own_thread_and_sqlite_gets_its_own_back(tmp_path):
    path = tmp_path / "harness.db"
    conn = open_for_writing(path)
    checkpoints = BackgroundCheckpoints(path, conn, pages=4, limit=10_000)
    checkpoints.start()
    ran = False
    position = 1
    for _ in range(20):
        events = _recorded(200)
        with transaction(conn) as cursor:
            append_values(cursor, event_values(events, position))
        checkpoints.after_commit()
        position += len(events)
        ran = _wait_for(lambda: checkpoints.background > 0, 0.5)
        if ran:
            break
    assert ran, "no background checkpoint ran"
    assert checkpoints.inline == 0
    checkpoints.stop()
    assert not any(t.name == "harness-wal-checkpoint" for t in threading.enumerate())
    assert conn.execute("SELECT count(*) FROM events").get == position - 1


def test_the_writer_checkpoints_itself_past_the_limit(tmp_path):
    path = tmp_path / "harness.db"
    conn = open_for_writing(path)
    checkpoints = BackgroundCheckpoints(path, conn, pages=10**9, limit=4)  # the thread never wakes
    checkpoints.start()
    try:
        with transaction(conn) as cursor:
            append_values(cursor, event_values(_recorded(500), 1))
        checkpoints.after_commit()
        assert checkpoints.inline == 1
        assert checkpoints.background == 0
    finally:
        checkpoints.stop()


def _wait_for(condition, seconds: float) -> bool:
    done = threading.Event()
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        done.wait(0.01)
    return bool(condition())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_canonical_json_is_sorted_compact_and_utf8(value):
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected


texts = st.text(max_size=40)
maybe_texts = st.none() | texts
call_events = st.builds(
    ToolCallCompleted,
    ts=st.floats(),
    session_id=texts,
    latency_ms=st.floats(),
    harness=maybe_texts,
    run_id=maybe_texts,
    adapter=maybe_texts,
    model=maybe_texts,
    config_hash=maybe_texts,
    upstream=texts,
    tool=texts,
    tier=st.sampled_from(["read", "write"]),
    args_hash=maybe_texts,
    args=maybe_texts,
    outcome=st.sampled_from(["ok", "tool_error", "timeout"]),
    error_reason=maybe_texts,
    response_bytes=st.integers(min_value=-(2**70), max_value=2**70),
    response_tokens_est=st.integers(min_value=0, max_value=2**40),
    trace_id=texts,
    span_id=texts,
    exposed_name=texts,
    via_call_tool=st.none() | st.booleans(),
    request_id=maybe_texts,
)


@given(call_events)
def test_a_flat_event_is_written_as_pydantic_writes_it(event):
    assert ToolCallCompleted.FLAT_FIELDS
    assert encode(event) == event.model_dump_json()


def test_what_orjson_refuses_goes_to_pydantic_which_decides():
    (event,) = _recorded(1)
    huge = event.model_copy(update={"response_bytes": 2**80})
    assert encode(huge) == huge.model_dump_json()
    odd = event.model_copy(update={"tool": "bad\ud800name"})
    with pytest.raises(ValueError, match="surrogates not allowed"):  # refused as before orjson
        encode(odd)


@given(
    st.one_of(
        st.floats(min_value=0, max_value=4.1e9, allow_nan=False),
        # the edges of a millisecond, where rounding decides
        st.builds(
            lambda s, ms, d: s + ms / 1000 + d,
            st.integers(0, 4_000_000_000),
            st.integers(0, 999),
            st.sampled_from([0.0005, 0.00049999, -1e-7, 0.0004999999999]),
        ),
    )
)
def test_call_log_ts_is_the_same_text_from_sql_python_and_strftime(ts):
    conn = apsw.Connection(":memory:")
    made, documented = conn.execute(
        f"SELECT {TS_SQL.format('?1')}, strftime('%Y-%m-%dT%H:%M:%fZ', ?1, 'unixepoch')", (ts,)
    ).fetchone()
    assert made == documented == iso_ms(ts)
