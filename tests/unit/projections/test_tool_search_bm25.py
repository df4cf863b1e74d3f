"""The tool search's bm25 from memory: FTS5's own scores and order, refreshed when the index changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projection_support import CATALOGS, fold_into, memory_store, tool
from tests_support import catalog

from harness.sample_store import load_catalogs
from harness.search.bm25 import Snapshot
from harness.search.bm25 import snapshot as snapshot_of
from harness.search.documents import WEIGHTS
from harness.search.queries import parse_query
from harness.search.ranking import match_expression, search, vocabulary

BENCH_DATA = Path(__file__).parents[3] / "bench" / "data"

FLEET = {
    "git": [
        tool("git_status", "Shows the working tree status", {"repo_path": {"type": "string"}}),
        tool("git_commit", "Records changes to the repository", {"repo_path": {}, "message": {}}),
        tool("git_log", "Shows the commit logs", {"max_count": {"description": "Maximum number of commits"}}),
    ],
    "github": [
        tool("createPullRequest", "Open a new pull request", {"owner": {}, "repo": {}, "head": {}}),
        tool("get-issue", "Get details of a specific issue, café naïve", {"issue_number": {}}),
        tool("list_commits", "List commits of a branch; commits commits commits", {"sha": {}}),
    ],
}


@pytest.fixture
def conn():
    c = memory_store()
    fold_into(c, [catalog(up, tools) for up, tools in FLEET.items()])
    return c


def matched(conn, query):
    """FTS5's ranking of every match of the query's words, as (rowid, bm25), best first."""
    parsed = parse_query(query)
    vocab = vocabulary(conn, parsed.stems, frozenset(parsed.names))
    terms = [*parsed.terms, *(w for w in parsed.joined if w in vocab.idf)]
    sql = "SELECT rowid, rank AS score FROM tool_fts WHERE tool_fts MATCH ? ORDER BY score, rowid"
    return terms, [(rowid, -score) for rowid, score in conn.execute(sql, (match_expression(terms),))]


def test_the_bm25_from_memory_is_fts5s_to_the_last_bit(conn):
    for query in ["commit changes", "pull request commits", "cafe naive issue", "git log git log", "status"]:
        terms, expected = matched(conn, query)
        assert snapshot_of(conn).bm25(terms) == expected


@settings(max_examples=200, deadline=None)
@given(query=st.text(max_size=60))
def test_a_search_ranks_as_the_fts5_match_query_does_for_any_query(query):
    conn = _shared()
    assert search(conn, query, k=5) == search(conn, query, k=5, weights=WEIGHTS)


_CONN: list = []


def _shared():
    if not _CONN:
        c = memory_store()
        fold_into(c, [catalog(up, tools) for up, tools in FLEET.items()])
        _CONN.append(c)
    return _CONN[0]


def test_a_word_the_tokenizer_splits_or_cuts_is_ranked_by_the_match_query(conn):
    snapshot = snapshot_of(conn)
    assert snapshot.token("commits") == "commit"
    assert snapshot.token("x" * 40_000) is None
    assert snapshot.bm25(["commit", "x" * 40_000]) is None
    hits = search(conn, "x" * 40_000 + " commit")
    assert hits and hits == search(conn, "x" * 40_000 + " commit", weights=WEIGHTS)


def test_a_new_catalogue_is_searched_at_once_and_an_empty_one_empties_its_upstream(conn):
    assert search(conn, "push to remote") == []
    fold_into(conn, [catalog("git", [tool("git_push", "Push commits to a remote")])])
    assert [h.name for h in search(conn, "push to remote")] == ["git__git_push"]
    assert not any(h.upstream == "git" and h.tool == "git_log" for h in search(conn, "commit logs", k=10))
    fold_into(conn, [catalog("git", [])])
    assert all(h.upstream != "git" for h in search(conn, "push commits to a remote", k=10))
    terms, expected = matched(conn, "push commits to a remote")
    assert snapshot_of(conn).bm25(terms) == expected


def test_a_snapshot_refreshed_row_by_row_equals_one_made_afresh(conn):
    snapshot = snapshot_of(conn)
    fold_into(conn, [catalog("git", [*FLEET["git"][1:], tool("git_push", "Push commits to a remote")])])
    fold_into(conn, [catalog("gitlab", [tool("create_merge_request", "Open a merge request")])])
    assert snapshot_of(conn) is snapshot
    fresh = Snapshot(conn)
    fresh.refresh(conn, snapshot.key)
    assert (fresh.terms, fresh.total) == (snapshot.terms, snapshot.total)
    assert fresh.bm25(["commit", "merge", "push"]) == snapshot.bm25(["commit", "merge", "push"])
    assert fresh.bm25(["commit", "merge", "push"]) == matched(conn, "commit merge push")[1]


def test_a_hits_schema_is_parsed_afresh_on_each_read(conn):
    (hit,) = search(conn, "records changes", k=1)
    schema = hit.input_schema
    schema["properties"].clear()
    assert hit.input_schema == FLEET["git"][1]["inputSchema"]
    assert json.loads(hit.schema_json) == hit.input_schema


def _queries():
    rows = json.loads((BENCH_DATA / "tool_queries.json").read_text())["queries"]
    queries = [row["query"] for row in rows]
    for name in ("tool-search-dev.jsonl", "tool-search-dev-2.jsonl", "tool-search-dev-3.jsonl"):
        lines = (BENCH_DATA / name).read_text().splitlines()
        queries += [json.loads(line)["query"] for line in lines if line.strip()]
    return queries


@pytest.mark.skipif(not CATALOGS.is_dir(), reason="shared/data/tool-catalogs is not beside the repository")
def test_over_the_real_catalogues_every_tuning_query_ranks_as_the_match_query_does():
    conn = memory_store()
    fold_into(conn, [catalog(up, tools) for up, tools in load_catalogs(str(CATALOGS)).items()])
    queries = _queries()
    assert len(queries) > 300
    snapshot = snapshot_of(conn)
    for query in queries:
        terms, expected = matched(conn, query)
        assert snapshot.bm25(terms) == expected, query
    for query in queries[::7]:
        assert search(conn, query) == search(conn, query, weights=WEIGHTS), query
