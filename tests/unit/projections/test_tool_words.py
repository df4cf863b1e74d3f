"""How tool search reads tool names and queries: words, stems, operations, products, synonyms."""

from __future__ import annotations

import pytest

from harness.search.queries import SYNONYMS, parse_query, plain_forms
from harness.search.words import (
    label_words,
    name_operation,
    operation_match,
    shared_words,
    split_words,
    stem,
    verb_match,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("createPullRequest", ("create", "create")),
        ("list_products", ("list", "list")),
        ("linear_getViewer", ("read", "get")),
        ("create-event", ("create", "create")),
        ("hubspot-batch-create-objects", ("create", "create")),
        ("API-post-page", ("create", "post")),
        ("git_status", ("", "")),
        ("start_search", ("search", "search")),
        ("start_process", ("run", "start")),
        ("manage_event", ("manage", "manage")),
    ],
)
def test_a_tool_name_is_read_as_an_operation_and_the_verb_that_says_it(name, expected):
    assert name_operation(split_words(name)) == expected


def test_plurals_are_folded_and_an_acronyms_plural_stays_one_word():
    assert [stem(w) for w in ("issues", "policies", "indexes", "branches", "prs")] == [
        "issue",
        "policy",
        "index",
        "branch",
        "pr",
    ]
    assert [stem(w) for w in ("status", "analysis", "ids", "s")] == ["status", "analysis", "id", "s"]
    assert split_words("list the open PRs") == ["list", "the", "open", "prs"]
    assert split_words("get-issue.v2_HTTPServer") == ["get", "issue", "v", "2", "http", "server"]


@pytest.mark.parametrize(
    ("query", "operation"),
    [
        ("open a pull request", "create"),
        ("open pull request for the fix", "create"),
        ("open pull requests in the web repo", "list"),  # which ones: the open ones
        ("open issues in the octocat/hello-world GitHub repo", "list"),
        ("open the config file", "read"),
        ("what's on my calendar Friday", "read"),
        ("who changed this page", "read"),
        ("how do I create an issue", "create"),
        ("delete the stale branch", "delete"),
        ("book a call with the vendor", "create"),
        ("stripe invoices", "list"),
        ("show open incidents", "list"),
        ("the stripe invoice", None),
        ("the on-call schedule", None),
        ("try the linear tools", ""),
    ],
)
def test_a_query_says_its_operation_by_its_verb_or_question(query, operation):
    assert parse_query(query).operation == operation


def test_words_after_a_preposition_qualify_what_comes_before():
    words = {w.stem: w.weight for w in parse_query("linear projects for the platform team").words}
    assert words == {"linear": 1.0, "project": 1.0, "platform": 0.5, "team": 0.5}
    hyphened = {w.stem: w.weight for w in parse_query("ping the on-call channel").words}
    assert hyphened["channel"] == 1.0  # on-call is a word, not "on"


def test_the_query_verb_is_matched_by_operation_and_other_common_verbs_are_not_asked_for():
    parsed = parse_query("add a new sheet to the workbook")
    assert parsed.operation == "create" and parsed.verb == "add"
    assert "add" not in parsed.terms  # every tool name says an operation: matched as one
    assert [w.stem for w in parsed.words] == ["add", "sheet", "workbook"]  # "new" only qualifies


def test_synonyms_lead_from_what_people_say_to_what_tools_say():
    assert SYNONYMS["pr"] == ("pull request",)
    assert "dispute" in parse_query("recent chargebacks").terms
    assert "refund" in parse_query("give the customer their money back").terms  # a two-word phrase
    assert "navigate" not in parse_query("open a PR").terms


def test_an_ing_or_ed_word_is_also_read_as_the_word_it_comes_from():
    assert "watch" in plain_forms("watching")
    assert "archive" in plain_forms("archived")
    assert "pin" in plain_forms("pinned")
    assert "set" not in plain_forms("setting")  # every set_ tool would say it
    assert plain_forms("issue") == [] and plain_forms("red") == []
    (word,) = [w for w in parse_query("papers I am watching").words if w.stem == "watching"]
    assert ("watch",) in word.alternatives


def test_an_abbreviation_or_a_product_served_names_its_upstream_stemmed_as_tool_terms_are():
    parsed = parse_query("restart the k8s deployment")
    assert "kubernete" in parsed.names and "kubernetes" in parsed.terms  # label words are stemmed
    assert "aw" in parse_query("configure S3 lifecycle rules").names


def test_how_many_asks_for_a_count_and_many_elsewhere_stays_a_word():
    assert "count" in parse_query("how many hosts report to datadog").terms
    assert "many" not in parse_query("how many hosts report to datadog").terms
    assert "many" in parse_query("delete many documents").terms
    assert "hover" in parse_query("move the mouse over the menu").terms  # a two-word synonym


def test_a_file_name_in_a_query_reads_as_a_file():
    terms = parse_query("read the package.json from the repo").terms
    assert "file" in terms and "json" not in terms
    assert "file" in parse_query("show me the Dockerfile").terms


def test_a_documents_file_name_also_says_its_type_and_so_its_application():
    terms = parse_query("values in A1:D20 of the Q3 sheet in forecast.xlsx").terms
    assert {"file", "xlsx", "excel"} <= set(terms)
    assert "docx" in parse_query("heading structure of report.docx").terms


@pytest.mark.parametrize(
    ("query", "kind", "gone"),
    [
        ("move PAY-12 to In Review", "issue", "pay"),
        ("last 50 messages in #incidents", "channel", "incidents"),
        ("load https://example.com/pricing in the browser", "url", "pricing"),
        ("invoices for customer cus_9XyZ", "customer", "9xyz"),
        ("cancel sub_1Kx9 right away", "subscription", "1kx9"),
    ],
)
def test_a_pasted_identifier_reads_as_the_kind_of_thing_it_names(query, kind, gone):
    terms = parse_query(query).terms
    assert kind in terms and gone not in terms


def test_a_hash_in_a_selector_a_snake_case_word_or_a_standards_name_is_no_identifier():
    assert "channel" not in parse_query("screenshot of the div#chart element").terms
    terms = parse_query("tasks in_progress with sub_tasks").terms
    assert "invoice" not in terms and "subscription" not in terms
    assert "issue" not in parse_query("SHA-256 of the UTF-8 file").terms


@pytest.mark.parametrize(
    ("query", "operation", "said", "gone"),
    [
        ("bring back the task I checked off by mistake", "update", "reopen", "back"),
        ("hand ENG-301 over to the Platform team", "update", "transfer", "over"),
        ("spin up a throwaway copy of the database", "create", "launch", "up"),
        ("roll the api deployment back", "update", "rollback", "back"),
        ("handing ENG-7 over to Platform", "update", "assign", "over"),
        ("keep an eye on the pricing page", "create", "watch", "eye"),
    ],
)
def test_a_phrasal_verb_says_its_operation_and_the_tools_words_not_its_particle(query, operation, said, gone):
    parsed = parse_query(query)
    assert parsed.operation == operation
    assert said in parsed.terms and gone not in parsed.terms


def test_a_particle_without_its_verb_stays_a_word():
    assert "back" in parse_query("go back one page in the browser").terms


def test_an_upstream_is_named_by_its_name_its_servers_name_and_what_its_tools_share():
    assert label_words("azure-devops", "Azure DevOps MCP Server") == ["azure", "devop"]
    assert label_words("context7", "Context7") == ["context7"]
    assert label_words("notion", "Notion API") == ["notion"]  # "api" names nothing
    tools = ["jira_get_issue", "jira_create_sprint", "confluence_get_page", "jira_add_comment"]
    assert shared_words(tools) == ["jira"]


def test_an_operation_fits_the_same_a_read_another_read_and_a_write_no_read():
    assert operation_match("create", "create") == 1.0
    assert operation_match("read", "list") == 0.5
    assert operation_match("read", "create") == -0.5
    assert operation_match(None, "list") == 1.0  # "stripe invoices": a list
    assert operation_match(None, "create") == -0.5
    assert operation_match("", "create") == 0.0  # a verb saying no operation
    assert operation_match("create", "manage") == 0.5
    assert operation_match("send", "create") == 0.5
    assert (
        verb_match("create", "create", "create", "duplicate") == 0.75
    )  # duplicateIssue creates, less plainly
    assert verb_match("create", "duplicate", "create", "duplicate") == 1.0


def test_an_empty_or_wordless_query_reads_as_nothing():
    for query in ("", "   ", "*", "'s"):
        parsed = parse_query(query)
        assert parsed.operation is None or query == "'s"
        assert not parsed.words or query == "'s"
