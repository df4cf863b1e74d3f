"""The reading API (harness.open_store): typed queries and DataFrames over a generated store."""

from __future__ import annotations

import math

import pytest

import harness
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.reading import StoreView
from harness.sample_store import SyntheticLog
from harness.store import StoreError, read_rows


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> StoreView:
    path = tmp_path_factory.mktemp("reading") / "harness.db"
    events = list(SyntheticLog(calls=600, seed=3, days=2).events())
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write(events).get(timeout=30)
    ref.stop()
    view = harness.open_store(path)
    yield view
    view.close()


def test_calls_filter_and_keep_the_most_recent_oldest_first(store):
    everything = store.calls()
    assert len(everything) == store.conn.execute("SELECT count(*) FROM call_log").get
    last5 = store.calls(limit=5)
    assert [r["position"] for r in last5] == [r["position"] for r in everything[-5:]]
    reviewer = store.calls(harness="reviewer", outcome="ok")
    assert reviewer and all(r["harness"] == "reviewer" and r["outcome"] == "ok" for r in reviewer)
    since = everything[len(everything) // 2]["ts"]
    assert all(r["ts"] >= since for r in store.calls(since=since))
    assert store.calls(since=since, until=since) == []


def test_sessions_add_up_to_the_calls(store):
    sessions = store.sessions()
    assert sum(s.calls for s in sessions) == len(store.calls())
    assert all(s.first_ts <= s.last_ts and 0 <= s.failures <= s.calls and s.tools >= 1 for s in sessions)


def test_tool_usage_counts_and_quantiles_are_consistent(store):
    usage = store.tool_usage()
    assert sum(u.calls for u in usage) == len(store.calls())
    assert usage == sorted(usage, key=lambda u: (-u.calls, u.upstream, u.tool))
    assert all(u.p50_ms <= u.p95_ms and u.failures <= u.calls for u in usage)


def test_the_search_hit_rate_joins_each_search_to_the_next_tool_called(store):
    searches = store.searches()
    rate = store.search_hit_rate()
    assert rate.searches == len(searches) > 10
    assert rate.hits == sum(1 for s in searches if s.hit)
    assert 0.5 < rate.rate < 1.0  # the generator puts the called tool in 80% of results
    for s in searches[:20]:
        if s.hit is not None:
            assert s.hit == (s.next_tool in s.results)


def test_read_rows_of_one_stored_name_yields_only_that_name_in_position_order(store):
    searches = list(read_rows(store.conn, name="tool_search.completed"))
    assert len(searches) > 10
    assert searches == [row for row in read_rows(store.conn) if row[2] == "tool_search.completed"]
    assert len(store.events_frame(name="tool_search.completed")) == len(searches)


def test_top_tools_and_upstreams_read_their_projections(store):
    top = store.top_tools("reviewer", 3)
    assert len(top) == 3 and top[0][2] >= top[1][2] >= top[2][2]
    ups = store.upstreams()
    assert {u["upstream"] for u in ups} == {"fetch", "git", "github", "time"}
    assert all(u["state"] == "up" for u in ups)


def test_search_tools_uses_the_tool_index(store):
    hits = store.search_tools("current time")
    assert hits[0].name == "time__get_current_time"


def test_data_frames_when_pandas_is_installed(store):
    pd = pytest.importorskip("pandas")
    calls = store.calls_frame(harness="coder")
    assert len(calls) == len(store.calls(harness="coder"))
    assert isinstance(calls["ts"].dtype, pd.DatetimeTZDtype)
    assert len(store.sessions_frame()) == len(store.sessions())
    usage = store.tool_usage_frame()
    assert math.isclose(usage["calls"].sum(), len(store.calls()))
    assert set(store.searches_frame().columns) >= {"query", "results", "hit"}


def test_a_store_without_the_new_projections_says_what_to_do(tmp_path):
    from harness.store import open_for_writing

    open_for_writing(tmp_path / "h.db").close()
    with harness.open_store(tmp_path / "h.db") as view, pytest.raises(StoreError, match="start the daemon"):
        view.search_tools("x")


def test_the_python_example_in_docs_dataset_md_runs(store):
    import re
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "dataset.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    code = code.replace('"~/.local/state/harness/harness.db"', repr(str(store.path)))
    code = code.replace("        ...\n", "        pass\n")
    namespace: dict = {}
    exec(compile(code, "docs/dataset.md", "exec"), namespace)
    assert len(namespace["calls"]) == len(store.calls())
