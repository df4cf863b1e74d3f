"""The tool index: FTS5 over every known tool, the latest catalogue per upstream, safe queries."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projection_support import CATALOGS, fold_into, memory_store, tool
from tests_support import catalog

from harness.naming import exposed_name
from harness.sample_store import load_catalogs
from harness.search.hits import all_tools, lookup
from harness.search.queries import parse_query
from harness.search.ranking import match_expression, query_words, search
from harness.search.words import split_words

GIT = [
    tool("git_status", "Shows the working tree status", {"repo_path": {"type": "string"}}),
    tool("git_commit", "Records changes to the repository", {"repo_path": {}, "message": {}}),
    tool("git_log", "Shows the commit logs", {"max_count": {"description": "Maximum number of commits"}}),
]
GITHUB = [
    tool("createPullRequest", "Open a new pull request", {"owner": {}, "repo": {}, "head": {}, "base": {}}),
    tool("get-issue", "Get details of a specific issue", {"issue_number": {}}),
]


@pytest.fixture
def conn():
    c = memory_store()
    fold_into(c, [catalog("git", GIT), catalog("github", GITHUB)])
    return c


def names(hits):
    return [h.name for h in hits]


def test_names_are_split_into_words_at_underscores_dashes_dots_and_camel_humps():
    assert split_words("createPullRequest") == ["create", "pull", "request"]
    assert split_words("get-issue.v2_HTTPServer") == ["get", "issue", "v", "2", "http", "server"]


def test_a_search_finds_tools_by_name_words_description_and_parameters(conn):
    assert names(search(conn, "commit changes"))[0] == "git__git_commit"
    assert names(search(conn, "pull request"))[0] == "github__createPullRequest"
    assert names(search(conn, "issue number"))[0] == "github__get-issue"
    assert "git__git_log" in names(search(conn, "maximum commits"))


def test_hits_carry_the_exposed_name_the_real_name_and_the_full_schema(conn):
    hit = search(conn, "pull request", k=1)[0]
    assert hit.name == exposed_name("github", "createPullRequest")
    assert (hit.upstream, hit.tool) == ("github", "createPullRequest")
    assert hit.input_schema == GITHUB[0]["inputSchema"]
    assert hit.description == "Open a new pull request"
    assert hit.score > 0


def test_results_are_best_first_and_at_most_k(conn):
    hits = search(conn, "git status log commit", k=2)
    assert len(hits) == 2
    assert hits[0].score >= hits[1].score


def test_the_latest_catalogue_of_an_upstream_replaces_its_previous_entries(conn):
    fold_into(conn, [catalog("git", [*GIT[:1], tool("git_push", "Push commits to a remote")])])
    known = names(all_tools(conn))
    assert "git__git_commit" not in known and "git__git_log" not in known
    assert "git__git_push" in known and "github__get-issue" in known
    assert search(conn, "records changes") == []
    assert names(search(conn, "push to remote")) == ["git__git_push"]


def test_allowed_restricts_in_sql_so_k_results_still_come_back(conn):
    everything = names(search(conn, "git repository commit status log", k=10))
    allowed = set(everything[1:])
    hits = search(conn, "git repository commit status log", k=2, allowed=allowed)
    assert len(hits) == 2 and all(h.name in allowed for h in hits)
    assert search(conn, "commit", allowed=set()) == []
    assert search(conn, "commit", allowed={"nope__nothing"}) == []


def test_an_empty_or_wordless_query_returns_nothing(conn):
    for query in ("", "   ", "*", '"" ()', "-- ^ :"):
        assert search(conn, query) == []


def test_fts5_syntax_in_a_query_is_only_words(conn):
    words = query_words('name:git NEAR(pull request) "commit" * AND OR NOT ^xy -yz')
    assert words[:9] == ["name", "git", "near", "pull", "request", "commit", "not", "xy", "yz"]
    assert all(w.isalnum() for w in words)
    assert match_expression(['a"b', "c"]) == '"a""b" OR "c"'
    assert names(search(conn, "tool_words:commit"))[0] == "git__git_commit"  # not a column filter
    assert search(conn, "NOT") == []  # a stop-word-free word like any other; nothing matches it


def test_stopwords_are_dropped_unless_nothing_else_is_left():
    words = query_words("how do I open a pull request")
    assert words[:2] == ["pull", "request"] and not {"how", "do", "i", "a"} & set(words)
    assert "open" in words  # a plain FTS5 search (skills) still looks for the verb
    assert query_words("what is it")[:3] == ["what", "is", "it"]


def test_a_tool_search_matches_the_query_verb_as_an_operation_not_as_a_word():
    assert "open" not in parse_query("how do I open a pull request").terms  # matched as create
    assert parse_query("how do I open a pull request").operation == "create"
    assert "create" not in parse_query("create an issue").terms
    assert "merge" in parse_query("merge the pull request").terms  # not one of the commonest verbs


def test_adjacent_words_are_joined_and_common_words_widened():
    words = query_words("who is on call")
    assert "oncall" in words
    assert "issue" in query_words("open a ticket") and "pull" in query_words("review my PRs")


@settings(max_examples=300, deadline=None)
@given(query=st.text(max_size=80), k=st.integers(min_value=-2, max_value=30))
def test_search_never_raises_on_any_query(query, k):
    conn = _shared_conn()
    hits = search(conn, query, k=k)
    assert len(hits) <= max(k, 0)


_CONN = []


def _shared_conn():
    if not _CONN:
        c = memory_store()
        fold_into(c, [catalog("git", GIT), catalog("github", GITHUB)])
        _CONN.append(c)
    return _CONN[0]


def test_a_catalogue_that_is_not_a_json_array_keeps_the_previous_entries(conn):
    fold_into(conn, [catalog("git", "{not json"), catalog("github", '{"tools": []}')])
    assert len(all_tools(conn)) == 5


def test_odd_tool_entries_are_skipped_and_duplicate_names_kept_once():
    conn = memory_store()
    odd = [
        {"name": "a", "description": 5, "inputSchema": []},
        {"name": "a"},
        {"description": "x"},
        "junk",
        {"name": 3},
    ]
    fold_into(conn, [catalog("up", odd)])
    (only,) = all_tools(conn)
    assert (only.name, only.description, only.input_schema) == ("up__a", "", {})
    assert lookup(conn, "up__a") == only
    assert lookup(conn, "up__b") is None


def test_long_names_are_indexed_under_their_shortened_exposed_name():
    conn = memory_store()
    long_tool = "x" * 60
    fold_into(conn, [catalog("svc", [tool(long_tool, "a very long tool")])])
    (hit,) = search(conn, "very long")
    assert hit.name == exposed_name("svc", long_tool) and len(hit.name) <= 50 and hit.tool == long_tool


@pytest.mark.skipif(not CATALOGS.is_dir(), reason="shared/data/tool-catalogs is not beside the repository")
def test_the_real_catalogues_are_all_indexed_and_searchable():
    catalogs = load_catalogs(str(CATALOGS))
    conn = memory_store()
    fold_into(conn, [catalog(up, tools) for up, tools in catalogs.items()])
    expected = sum(len({t["name"] for t in tools}) for tools in catalogs.values())
    assert len(all_tools(conn)) == expected == 1374
    assert names(search(conn, "take a screenshot of the browser page", k=5))[0].endswith("screenshot")
    assert "github__create_pull_request" in names(search(conn, "open a pull request on github", k=3))
    gitlab = [t for t in all_tools(conn) if t.upstream == "gitlab"]
    assert gitlab and all(json.dumps(t.input_schema) for t in gitlab)  # schemas without "type" are fine


@pytest.mark.parametrize(
    "query", ["\ud800 commit", "com\x00mit", "x" * 100_000 + " commit", "٣ ǅ commit", "\n\t"]
)
def test_surrogates_nul_and_huge_words_are_safe(query):
    hits = search(_shared_conn(), query)
    assert query.strip() == "" or hits


def test_a_search_over_some_upstreams_keys_finds_only_their_tools_though_names_repeat():
    one, two = "web@one-00000001", "web@two-00000002"
    c = memory_store()
    fold_into(
        c, [catalog(one, [tool("fetch", "Fetch a page")]), catalog(two, [tool("fetch", "Fetch a page")])]
    )
    hits = search(c, "fetch page", k=5, upstreams=frozenset({two}))
    assert [(h.name, h.upstream) for h in hits] == [("web__fetch", two)]
    assert {h.upstream for h in search(c, "fetch page", k=5, allowed={"web__fetch"})} == {one, two}


# ------------------------------------------------------------------------------------------ fleet

FLEET = {
    "gitlab": [
        tool(
            "get_file_contents", "Get the contents of a file or directory from a GitLab project", {"path": {}}
        ),
        tool("create_merge_request", "Create a new merge request in a GitLab project"),
    ],
    "git": [
        tool("git_show", "Shows the contents of a commit", {"repo_path": {}, "revision": {}}),
        tool("git_log", "Shows the commit logs", {"repo_path": {}}),
        tool("git_status", "Shows the working tree status", {"repo_path": {}}),
    ],
    "calendar": [
        tool("create-event", "Create a new calendar event"),
        tool("list-events", "List events from one or more calendars"),
        tool("delete-event", "Delete a calendar event"),
    ],
    "kb": [tool("post_page", "Create a page"), tool("get_page", "Retrieve a page")],
    "wiki": [tool("get_page", "Get a wiki page by its title"), tool("list_pages", "List the wiki's pages")],
}


def served(upstream: str, server_name: str, tools: list[dict[str, object]] | str):
    return catalog(upstream, tools).model_copy(update={"server_name": server_name})


@pytest.fixture
def fleet():
    c = memory_store()
    events = [catalog(up, tools) for up, tools in FLEET.items() if up != "kb"]
    fold_into(c, [*events, served("kb", "Notion API", FLEET["kb"])])
    return c


def test_a_query_naming_a_product_finds_that_upstreams_tools_first(fleet):
    assert names(search(fleet, "read the Dockerfile from our GitLab repo"))[0] == "gitlab__get_file_contents"
    assert names(search(fleet, "show the contents of the last commit"))[0] == "git__git_show"


def test_a_server_name_names_its_upstream(fleet):
    assert names(search(fleet, "get the page from notion"))[0] == "kb__get_page"
    assert names(search(fleet, "get the page from the wiki"))[0] == "wiki__get_page"


def test_a_catalogue_refreshed_without_a_server_name_keeps_the_last_one(fleet):
    fold_into(fleet, [served("kb", "", FLEET["kb"])])
    assert fleet.execute("SELECT server_name FROM tool_upstreams WHERE upstream = 'kb'").fetchone() == (
        "Notion API",
    )
    assert names(search(fleet, "get the page from notion"))[0] == "kb__get_page"


def test_the_operation_a_query_asks_for_ranks_first(fleet):
    assert names(search(fleet, "put the dentist appointment on my calendar"))[0] == "calendar__create-event"
    assert names(search(fleet, "cancel tomorrow's meeting"))[0] == "calendar__delete-event"
    assert names(search(fleet, "calendar events"))[0] == "calendar__list-events"  # things: a list
    assert names(search(fleet, "wiki pages"))[0] == "wiki__list_pages"


def test_a_common_name_word_alone_does_not_outweigh_the_words_no_name_holds():
    c = memory_store()
    browser = [tool(n, d) for n, d in [("close_page", "Close the current tab"), ("new_page", "Open a tab")]]
    browser.append(tool("take_screenshot", "Screenshot of the tab"))
    quotes = [tool("get_history", "Daily open, high, low and closing prices of a stock ticker")]
    quotes.append(tool("get_news", "News about a company"))
    fold_into(c, [catalog("browser", browser), catalog("quotes", quotes)])
    assert names(search(c, "what did the TSLA stock close at on March 3"))[0] == "quotes__get_history"
    assert names(search(c, "close the current tab"))[0] == "browser__close_page"


def test_tool_terms_count_name_words_and_mark_what_names_an_upstream(fleet):
    rows = {
        (word, upstream): (tools, product)
        for word, upstream, tools, product in fleet.execute(
            "SELECT word, upstream, tools, product FROM tool_terms"
        )
    }
    assert rows[("event", "calendar")] == (3, 1)  # in every name: a word its tools share
    assert rows[("calendar", "calendar")] == (0, 2)  # its NAME
    assert rows[("notion", "kb")] == (0, 2)  # its server's name
    assert rows[("page", "wiki")] == (2, 1)  # in both of its names
    assert rows[("file", "gitlab")] == (1, 0)


def test_an_upstream_listing_no_tools_names_none():
    c = memory_store()
    fold_into(c, [served("empty", "Empty Server", []), catalog("git", FLEET["git"])])
    assert search(c, "empty") == []
    assert names(search(c, "git status in the empty repo"))[0] == "git__git_status"


def test_the_filters_still_hold_after_the_rerank(fleet):
    allowed = {"wiki__get_page", "calendar__list-events"}
    hits = search(fleet, "get the page from notion", k=5, allowed=allowed)
    assert names(hits) == ["wiki__get_page"]
    assert {h.upstream for h in search(fleet, "page", k=5, upstreams={"kb"})} == {"kb"}
