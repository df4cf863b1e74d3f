"""How tool search reads words: names split, a light stem, operations, products, stop words.

Pure functions and tables, no I/O; ``documents`` and ``queries`` use them on both sides of a search:

- a tool name is split into words (``createPullRequest`` → create pull request) and read as an
  **operation** (its first verb mapped to a canonical one: get/read/fetch/show → ``read``,
  create/add/new/post → ``create``, …) and the **object** words around it;
- an upstream's **product words** are what names it: its NAME's words, its ``serverInfo.name``'s
  words, and the words most of its own tool names carry (``jira`` and ``confluence`` for
  ``atlassian``, ``kubectl`` for ``kubernetes``), less a few words that name nothing (``mcp``,
  ``server``, ``api``);
- a query's words are stemmed the same way and read for an operation with the same verbs
  (``queries``).

Nothing here is learnt: every table is written out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])")
_NON_WORD = re.compile(r"[\W_]+")
_ACRONYM_PLURAL = re.compile(r"(?<=[A-Z]{2})s(?![a-z])")


def split_words(text: str) -> list[str]:
    """Lower-case words of an identifier or a phrase: ``getPullRequest_v2`` → get pull request v 2;
    an acronym's plural stays one word (``PRs`` → prs)."""
    text = _HUMPS.sub(" ", _ACRONYM_PLURAL.sub("S", text))
    return [w.lower() for w in _NON_WORD.split(text) if w]


_KEEP_S = ("ss", "us", "is", "as", "os", "ys")


def stem(word: str) -> str:
    """A light stem for table lookups: plurals folded (``issues`` → issue, ``policies`` → policy,
    ``prs`` → pr, ``indexes`` → index); anything else as it is. FTS5 stems with Porter on its own."""
    if len(word) < 3 or not word.endswith("s") or word.endswith(_KEEP_S):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    return word[:-1]


# ------------------------------------------------------------------------------------------ operations

READ, LIST, SEARCH, CREATE, UPDATE, DELETE, RUN, SEND = (
    "read",
    "list",
    "search",
    "create",
    "update",
    "delete",
    "run",
    "send",
)

_OPERATIONS_TEXT = """
read: get read retrieve fetch show view describe inspect download explain info details whoami
  load see display check export render analyze analyse validate diff compare count summarize
  summarise print preview watch peek glance grab
list: list enumerate
search: search find query lookup look locate grep browse
create: create add new make insert generate upsert append post draft write import upload put book
  schedule raise compose register setup fork copy clone duplicate install subscribe push attach
  open file comment jot remember
update: update edit modify patch set rename move replace format change transition assign
  bump reschedule adjust tweak fix mark toggle merge close reopen complete resolve approve pause undo tick
  restore rollback scale apply upgrade mute unmute
delete: delete remove drop erase clear archive uninstall unwatch cancel kill terminate purge wipe
  forget unsubscribe
run: run execute exec trigger start rerun evaluate invoke launch kick convert
send: send reply respond notify publish tell message ping email mail dm text
manage: manage
any: use do try help handle work go
"""
OPERATIONS: dict[str, str] = {
    verb: op
    for op, _, verbs in (block.partition(":") for block in re.split(r"\n(?=\w)", _OPERATIONS_TEXT.strip()))
    for verb in verbs.split()
}
for _verb in [v for v, op in OPERATIONS.items() if op == "any"]:
    OPERATIONS[_verb] = ""
"""Verb → canonical operation (the verbs of the catalogues' tool names, and the words people use for
them). A tool's operation is that of the first of its name's words found here; a verb that says no
operation (``use``, ``help``) maps to ''; ``open`` is read as create (a PR, a ticket)."""

_NOUN_VERBS_TEXT = """schedule book post set check view query draft format change export import upload
download message display look mark fix watch start record note comment call report load file log
trace test build deploy merge commit move ping email mail dm text"""
NOUN_VERBS = frozenset(_NOUN_VERBS_TEXT.split())
"""Verbs that are as often nouns ("the on-call schedule"): read as the query's operation only when
they come first ("schedule a call")."""

MANAGE = "manage"
_READS = frozenset({READ, LIST, SEARCH})
_WRITES = frozenset({CREATE, UPDATE, DELETE})


def verb_operation(word: str) -> str | None:
    """The operation of a verb, also in its -ing and -ed forms (``creating`` → create)."""
    op = OPERATIONS.get(word)
    if op is not None:
        return op
    for suffix, repl in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("d", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            op = OPERATIONS.get(word[: -len(suffix)] + repl)
            if op is not None:
                return op
    return None


def name_operation(words: Sequence[str]) -> tuple[str, str]:
    """A tool's operation and the verb that says it, from its name's words (``('', '')`` when no
    word of it is a known verb)."""
    for i, word in enumerate(words):
        op = OPERATIONS.get(word)
        if op:
            if word in STARTS:  # start_search searches; start_process runs
                later = next((w for w in words[i + 1 :] if w in _ANY_CORE_VERB), None)
                if later is not None:
                    return OPERATIONS[later], later
            return op, word
    return "", ""


STARTS = frozenset({"start", "stop", "begin", "end"})


_CORE_VERBS_TEXT = """
read: get read retrieve fetch show view describe
list: list
search: search find query
create: create add new make insert
update: update edit modify patch set
delete: delete remove
run: run execute exec
send: send reply
"""
CORE_VERBS: dict[str, frozenset[str]] = {
    op: frozenset(verbs.split())
    for op, _, verbs in (line.partition(":") for line in _CORE_VERBS_TEXT.strip().splitlines())
}
"""The verbs that say an operation plainly: ``duplicateIssue`` creates, but "create an issue" wants
``createIssue`` first."""
_ANY_CORE_VERB = frozenset().union(*CORE_VERBS.values())


def verb_match(query_op: str | None, query_verb: str, tool_op: str, tool_verb: str) -> float:
    """``operation_match``, three quarters of it for a tool whose verb says the operation only in
    passing (``duplicate``, ``subscribe`` for create) unless the query says that very verb."""
    fit = operation_match(query_op, tool_op)
    if fit > 0 and tool_verb != query_verb and tool_verb not in CORE_VERBS.get(tool_op, ()):
        return 0.75 * fit
    return fit


def operation_match(query_op: str | None, tool_op: str) -> float:
    """How well a tool's operation fits a query's: 1 the same, 0.5 both reads (or a write asked of
    a ``manage`` tool, which creates, updates and deletes), 0 unknown, -0.5 a read asked and a
    write found (or the reverse). ``query_op`` None is a query naming only things
    ("stripe invoices"): it wants a read, a list first."""
    if not tool_op or query_op == "":
        return 0.0
    if query_op is None:
        return {LIST: 1.0, SEARCH: 0.5, READ: 0.5}.get(tool_op, -0.5)
    if query_op == tool_op:
        return 1.0
    if tool_op == MANAGE:
        return 0.5 if query_op in _WRITES else -0.5
    if {query_op, tool_op} == {SEND, CREATE}:
        return 0.5  # a message sent is one created
    if query_op in _READS and tool_op in _READS:
        return 0.5
    if (query_op in _READS) != (tool_op in _READS):
        return -0.5
    return 0.0


# ------------------------------------------------------------------------------------------ products

_GENERIC_PRODUCT_TEXT = """mcp server servers service api apis sdk client official example examples app
io v modelcontextprotocol protocol the of and for by tool tools"""
GENERIC_PRODUCT_WORDS = frozenset(_GENERIC_PRODUCT_TEXT.split())
"""Words of upstream and server names that name no product (``mcp-server-x``, ``Notion API``)."""

PRODUCT_SHARE = 0.5
"""A word in at least this share of an upstream's tool names (and two of them) is a product word."""


def _product_word(word: str) -> bool:
    return (
        len(word) > 1 and not word.isdigit() and word not in GENERIC_PRODUCT_WORDS and word not in OPERATIONS
    )


_LABEL_SPLIT = re.compile(r"[\W_]+")


def label_words(upstream: str, server_name: str) -> list[str]:
    """The words of an upstream's NAME and of its server's name, split only between words (``Azure
    DevOps`` → azure devops, ``MongoDB`` → mongodb, ``context7`` stays), stemmed, without verbs,
    digits and ``GENERIC_PRODUCT_WORDS``."""
    words = (stem(w) for w in _LABEL_SPLIT.split(f"{upstream} {server_name}".lower()) if w)
    return list(dict.fromkeys(w for w in words if _product_word(w)))


def shared_words(tool_names: Iterable[str]) -> list[str]:
    """The words most of an upstream's tool names share (at least ``PRODUCT_SHARE`` of them and
    two), stemmed, without verbs: ``jira`` and ``confluence`` for atlassian's tools."""
    names = list(tool_names)
    counts: Counter[str] = Counter()
    for name in names:
        counts.update({stem(w) for w in split_words(name)})
    return [
        w for w, n in counts.most_common() if n >= 2 and n >= PRODUCT_SHARE * len(names) and _product_word(w)
    ]


def product_words(upstream: str, server_name: str, tool_names: Iterable[str]) -> list[str]:
    """The words that name an upstream: ``label_words`` then ``shared_words``."""
    return list(dict.fromkeys(label_words(upstream, server_name) + shared_words(tool_names)))


# ------------------------------------------------------------------------------------------ stop words

_STOPWORDS_TEXT = """a an the and or but of to in on at by for with from into onto about as via is are was
were be been do does did how i me my we our us you your it its this that these those what which who
whom can could should would will shall may might must please want need some any all there here then
their them they his her him she he out up off down use using used has have had
than so such just also very let lets way thing things tool tools whose when where called named titled"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
"""Words dropped from a query (unless nothing else is left): they match everywhere and rank noise."""
