"""How tool search reads a query (``parse_query``): its words, stemmed lightly (``PRs`` → pr,
``policies`` → policy), pasted identifiers and file names read as the kind of thing they name, the
operation it asks for (its verbs, phrasal ones too, or a question's ``what``/``which``: read),
qualifiers after a preposition, and widened with ``SYNONYMS``, a table written from the catalogues'
own vocabulary (each entry a word the tools use and the words people use for it).

Nothing here is learnt: every table is written out, below or in ``word_tables`` (the long ones).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.search.word_tables import ALIASES_TEXT, PHRASAL_VERBS_TEXT, SYNONYMS_TEXT
from harness.search.words import (
    CREATE,
    LIST,
    NOUN_VERBS,
    READ,
    STOPWORDS,
    stem,
    verb_operation,
)

_TOKEN = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def query_tokens(text: str) -> list[str]:
    """Lower-case words of a query: split between words and at underscores, and a camelCase
    identifier at its humps (``useEffect`` → use effect), but a capitalised name kept whole
    (``GitLab`` → gitlab, ``PagerDuty`` → pagerduty, ``PRs`` → prs, ``k8s``, ``S3``)."""
    words: list[str] = []
    for token in _TOKEN.findall(text):
        if token[0].islower() and not token.islower():
            words.extend(w.lower() for w in _CAMEL.split(token) if w)
        else:
            words.append(token.lower())
    return words


_FILE_NAME = re.compile(
    r"\b[\w.-]+\.(?:json|ya?ml|md|txt|py|ts|tsx|js|jsx|toml|csv|xlsx|docx|pdf|png|jpe?g|gif|svg|html|css"
    r"|sh|go|rs|java|rb|xml|ini|cfg|lock|env|log|sql|ipynb)\b|\b(?:Dockerfile|Makefile|README|LICENSE)\b",
    re.I,
)
"""A file's name in a query (``config.yaml``, ``README``) is read as the word ``file``."""

DOCUMENT_TYPES = frozenset({"xlsx", "docx", "pptx", "pdf", "csv", "ipynb"})
"""File types that say which application's tools a file is for: a name of one (``budget.xlsx``) is
read as ``file`` and its type (``file xlsx``), which ``SYNONYMS`` and ``ALIASES`` may map further."""


def _file_words(found: re.Match[str]) -> str:
    """What a file's name in a query is read as: ``file``, and its type if a ``DOCUMENT_TYPES`` one."""
    kind = found.group().rpartition(".")[2].lower()
    return f" file {kind} " if kind in DOCUMENT_TYPES else " file "


_STRIPE_IDS = {"cus": " customer ", "sub": " subscription ", "in": " invoice ", "pi": " payment intent "}
_IDENTIFIERS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"\bhttps?://\S+"), " url "),
    (re.compile(r"\b(?!(?:UTF|SHA|ISO|RFC|GPT|CVE|COVID)-)[A-Z][A-Z0-9]{1,9}-[0-9]+\b"), " issue "),
    (re.compile(r"(?:^|(?<=\s))#[a-z][\w-]*"), " channel "),
    (re.compile(r"\b(cus|sub|in|pi)_(?=\w*[0-9A-Z])\w{4,}"), lambda found: _STRIPE_IDS[found.group(1)]),
)
"""Identifiers an agent pastes, read as the kind of thing they name: a link (``https://…``), an
issue key (``PAY-12``: not the words pay and 12; not ``UTF-8``, ``SHA-256`` …), a chat channel
(``#incidents``), Stripe's ids (``cus_9XyZ``; a digit or capital in them, so ``in_progress`` and
``sub_tasks`` stay words)."""
_IDENTIFIER_HINTS = re.compile(r"://|-[0-9]|#|_")


_WHO_AM_I = re.compile(r"\bwho\s+am\s+i\b", re.I)
_FILE_WORD = re.compile(r"Dockerfile|Makefile|README|LICENSE", re.I)

OPENED_TO_READ = frozenset(
    {"file", "files", "document", "doc", "page", "url", "link", "site", "website", "tab", "folder"}
    | {"directory", "sheet", "spreadsheet", "pdf", "image", "email", "message", "browser"}
)
"""What "open" reads rather than creates."""

SHOW_VERBS = frozenset({"show", "display", "see", "view", "give"})
"""Verbs that ask for a list when what they name is in the plural ("show open incidents")."""

QUANTITIES = frozenset({"many", "much"})
COUNT = "count"
"""After ``how`` these ask for a count ("how many hosts"), not for many things (``delete-many``)."""

QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "how"})
"""A query asking one of these (and naming no verb) reads: its operation is ``read``."""

MAX_QUERY_WORDS = 32

DROP_GENERIC_VERBS = True
_GENERIC_VERBS_TEXT = """get list create update delete add remove find search show make new set read fetch
view display retrieve edit modify change open"""
GENERIC_VERBS = frozenset(_GENERIC_VERBS_TEXT.split())
"""The most common verbs of tool names: a query's verb among them is matched by operation (every
tool's name says one), not searched for as a word (it matches a third of the tools); elsewhere in a
query they qualify ("the new sheet", "the open PRs") and are left out."""

LEADING_PARTICLES = frozenset({"on"})
TRAILING_PARTICLES = frozenset({"in", "up", "out"})
"""Stop words that still join their neighbour (``on call`` → oncall, ``log in`` → login)."""


def _phrasal_table(text: str) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    table: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
    for line in text.strip().splitlines():
        head, _, said = line.partition(":")
        verb, particle = head.split()
        operation, *words = said.split()
        table.setdefault(verb, {})[particle] = (operation, tuple(words))
    return table


PHRASAL_VERBS = _phrasal_table(PHRASAL_VERBS_TEXT)
"""Verb → particle → (the operation asked, the words tools use): ``word_tables.PHRASAL_VERBS_TEXT``."""
PHRASAL_REACH = 4
"""How many words after its verb a phrasal verb's particle may come ("hand ENG-301 over")."""


def _phrasal_verb(raw: Sequence[str]) -> tuple[int, int, str, tuple[str, ...]] | None:
    """The first phrasal verb of a query: its verb's and particle's indexes, operation, tool words."""
    for i, word in enumerate(raw):
        particles = next(
            (PHRASAL_VERBS[form] for form in (word, *plain_forms(word)) if form in PHRASAL_VERBS), None
        )  # "rolled back", "handing it over"
        if particles is None:
            continue
        for j in range(i + 1, min(len(raw), i + 1 + PHRASAL_REACH)):
            found = particles.get(raw[j])
            if found is not None:
                return i, j, *found
    return None


def _synonym_table(text: str) -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for line in text.strip().splitlines():
        head, _, said = line.partition(":")
        for phrase in said.split():
            key = " ".join(stem(w) for w in phrase.split("_"))
            table.setdefault(key, []).append(head.strip())
    return {word: tuple(dict.fromkeys(heads)) for word, heads in table.items()}


SYNONYMS: dict[str, tuple[str, ...]] = _synonym_table(SYNONYMS_TEXT)
"""A (stemmed) word people use, or two adjacent ones (``money back``) → the words tools use for
it (``pr`` → pull request, ``money back`` → refund)."""


PREPOSITIONS = frozenset(
    {"for", "in", "on", "at", "from", "to", "into", "onto", "with", "of", "about", "by", "via", "under"}
    | {"over", "inside", "within", "across", "during", "before", "after", "near", "against", "between"}
    | {"called", "named", "titled", "saying", "containing"}
)
MODIFIER_WEIGHT = 0.5
"""The weight of a word after a preposition ("projects *for the platform team*"): what a query asks
for comes first, what qualifies it after."""


ALIASES: dict[str, tuple[str, ...]] = {
    stem(alias): tuple(product.split())
    for product, _, aliases in (line.partition(":") for line in ALIASES_TEXT.strip().splitlines())
    for alias in aliases.split()
}
"""An abbreviation or a product an upstream serves (stemmed, as a query's words are) → the label words
it stands for, as written (``k8s`` → kubernetes, ``s3`` → aws): it names what they name."""


@dataclass(frozen=True)
class QueryWord:
    """A content word of a query."""

    stem: str
    weight: float
    """1, or ``MODIFIER_WEIGHT`` after a preposition."""

    alternatives: tuple[tuple[str, ...], ...]
    """Other ways a tool name says it, each a run of stems that must all be there (``pr`` → pull
    request; ``call`` after ``on`` → oncall)."""

    operation: str | None
    """The query's operation if this is the verb that asks for it, else None."""


@dataclass(frozen=True)
class Query:
    """A query as the search reads it."""

    terms: tuple[str, ...]
    """What FTS5 matches (any of them): the content words and their synonyms."""

    words: tuple[QueryWord, ...]
    """The content words, stemmed, in order, each once."""

    operation: str | None
    """The operation it asks for (``create``, ``read``, …; '' for a verb that says none), or None:
    it names only things."""

    verb: str = ""
    """The word that says the operation, if one does."""

    joined: tuple[str, ...] = ()
    """Adjacent words joined (``on call`` → oncall): a search looks for those some tool name says."""

    plurals: tuple[str, ...] = ()
    """Its words in the plural, as it says them (``users``)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The stems that may name an upstream: its own words, and what their abbreviations stand for."""
        out = [w.stem for w in self.words]
        out += [stem(s) for w in self.words for s in ALIASES.get(w.stem, ())]
        return tuple(dict.fromkeys(out))

    @property
    def stems(self) -> tuple[str, ...]:
        """Every stem the query's words and their alternatives use (its own first)."""
        out = list(self.names)
        out += [s for w in self.words for alternative in w.alternatives for s in alternative]
        return tuple(dict.fromkeys(out))


_INFLECTIONS = ("ing", "ed")


def plain_forms(word: str) -> list[str]:
    """The words an -ing or -ed form may come from, for a tool name to say (``watching`` → watch,
    ``archived`` → archive, ``pinned`` → pin); none that is a common verb (``setting`` is not
    ``set``: every set_ tool would say it) or a stop word."""
    forms: list[str] = []
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            root = word[: -len(suffix)]
            forms += [root, root + "e"]
            if root[-1] == root[-2] and root[-1] not in "aeiouls":
                forms.append(root[:-1])
    return [w for w in dict.fromkeys(forms) if w not in GENERIC_VERBS and w not in STOPWORDS]


STATE_VERBS = frozenset({"open"})
"""Verbs that also say which things are meant, when a noun in the plural follows at once: "open pull
requests" are the ones open (a read), "open a pull request" makes one."""


def _says_a_state(raw: Sequence[str], content: Sequence[int]) -> bool:
    """Whether the query starts with a ``STATE_VERBS`` word right before the words of a plural noun
    ("open issues in the repo", "open pull requests")."""
    first = content[0]
    if raw[first] not in STATE_VERBS:
        return False
    for word in raw[first + 1 :]:
        if word in STOPWORDS or word in PREPOSITIONS:
            return False
        if stem(word) != word:
            return True
    return False


def _the_verb(
    raw: Sequence[str], content: list[int]
) -> tuple[int | None, str | None, list[int], tuple[str, ...]]:
    """The query's verb (an index of ``raw``) and the operation it asks for (see ``parse_query``); the
    content words, less a phrasal verb's particle; and the words tools use for that phrasal verb."""
    state = content[0] if _says_a_state(raw, content) else None
    verb = content[0] if verb_operation(raw[content[0]]) is not None and state is None else None
    operation = None if verb is None else verb_operation(raw[verb])
    phrasal = _phrasal_verb(raw)
    said: tuple[str, ...] = ()
    if phrasal is not None and verb in (None, phrasal[0]):
        verb, operation, said = phrasal[0], phrasal[2], phrasal[3]
        content = sorted({*(i for i in content if i != phrasal[1]), verb})
    if operation == CREATE and raw[content[0]] == "open" and any(raw[i] in OPENED_TO_READ for i in content):
        operation = READ  # open a file, a page, a link: read it (open a PR, a ticket: create one)
    asks = raw[0] in QUESTION_WORDS and not (raw[0] == "how" and raw[1:2] in (["do"], ["to"], ["can"]))
    if asks or (operation is None and any(w in QUESTION_WORDS for w in raw)):
        return None, READ, content, ()  # "who changed this page": a read; "how do I create": a create
    if operation is None:
        verb = next(
            (
                i
                for i in content
                if i != state and stem(raw[i]) not in NOUN_VERBS and verb_operation(raw[i]) is not None
            ),
            None,
        )
        operation = None if verb is None else verb_operation(raw[verb])
    return verb, operation, content, said


def parse_query(query: str) -> Query:
    """Read a query: words, stop words dropped (unless nothing else is left), the operation asked
    (its first word's if a verb, else ``read`` for a question, else the first verb that is rarely
    a noun; ``list`` for a read of things in the plural: "show open incidents"), adjacent words
    joined (``on call`` → oncall), each word's synonyms; the FTS5 terms deduplicated and capped at
    ``MAX_QUERY_WORDS``."""
    query = _WHO_AM_I.sub(" whoami ", query)
    if _IDENTIFIER_HINTS.search(query):
        for pattern, kind in _IDENTIFIERS:
            query = pattern.sub(kind, query)
    if "." in query or _FILE_WORD.search(query):
        query = _FILE_NAME.sub(_file_words, query)
    raw = query_tokens(query)
    if not raw:
        return Query((), (), None)
    raw = [COUNT if w in QUANTITIES and i and raw[i - 1] == "how" else w for i, w in enumerate(raw)]
    content = [i for i, w in enumerate(raw) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    content = content or list(range(len(raw)))  # "what's" → what s: a letter alone says nothing
    joined = {
        i: raw[i] + raw[i + 1]
        for i in range(len(raw) - 1)
        if len(raw[i]) + len(raw[i + 1]) >= 5
        and (raw[i] not in STOPWORDS or raw[i] in LEADING_PARTICLES)
        and (raw[i + 1] not in STOPWORDS or raw[i + 1] in TRAILING_PARTICLES)
    }
    verb, operation, content, phrasal_words = _the_verb(raw, content)
    lowered = query.lower()
    first_preposition = next(
        (
            i
            for i, w in enumerate(raw)
            if w in PREPOSITIONS and not (i in joined and f"{w}-{raw[i + 1]}" in lowered)  # on-call
        ),
        len(raw),
    )
    things = [i for i in content if i != verb]
    head = max((i for i in things if i < first_preposition), default=things[0] if things else None)
    shows = operation is None or (verb is not None and raw[verb] in SHOW_VERBS)
    if shows and head is not None and stem(raw[head]) != raw[head]:
        operation = LIST
    phrases: dict[int, list[str]] = {}  # two adjacent content words people say for a tool word
    for a, b in itertools.pairwise(content):
        for said in SYNONYMS.get(f"{stem(raw[a])} {stem(raw[b])}", ()):
            phrases.setdefault(a, []).append(said)
            phrases.setdefault(b, []).append(said)
    if phrasal_words and verb is not None:
        phrases.setdefault(verb, []).extend(phrasal_words)
    words: dict[str, QueryWord] = {}
    for i in content:
        word = raw[i]
        if i != verb and word in GENERIC_VERBS and len(content) > 1:
            continue  # "the new sheet", "the open PRs": searched for, but not what the query asks
        s = stem(word)
        alternatives = [
            tuple(stem(w) for w in h.split()) for h in (*SYNONYMS.get(s, ()), *phrases.get(i, ()))
        ]
        alternatives += [(joined[j],) for j in (i - 1, i) if j in joined]
        alternatives += [(base,) for base in plain_forms(s)]
        weight = 1.0 if i < first_preposition else MODIFIER_WEIGHT
        if s in words:
            weight = max(weight, words[s].weight)
        words[s] = QueryWord(s, weight, tuple(alternatives), operation if i == verb else None)
    terms = [raw[i] for i in content]
    for said_as in [*(SYNONYMS.get(s, ()) for s in words), *phrases.values()]:
        terms.extend(w for tool_word in said_as for w in tool_word.split())
    for s in words:
        terms.extend(ALIASES.get(s, ()))
    if DROP_GENERIC_VERBS and verb is not None and raw[verb] in GENERIC_VERBS:
        terms = [t for t in terms if t != raw[verb]] or terms
    return Query(
        tuple(dict.fromkeys(terms))[:MAX_QUERY_WORDS],
        tuple(words.values()),
        operation,
        raw[verb] if verb is not None else "",
        tuple(dict.fromkeys(joined.values())),
        tuple(raw[i] for i in content if stem(raw[i]) != raw[i] and i != verb),
    )
