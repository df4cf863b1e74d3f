"""How a tool becomes a searchable document: the columns of ``tool_fts`` and their bm25 weights, a
catalogue's usable tools, a tool's ``tool_index`` row and its upstream's ``tool_terms`` rows.

The ``tool_index`` projection (``harness.projections.tool_index``) folds catalogues through these;
``harness.search.ranking`` reads the same columns back.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.naming import exposed_name
from harness.search.words import OPERATIONS, STOPWORDS, name_operation, split_words, stem

__all__ = [
    "FTS_COLUMNS",
    "LABEL",
    "MAX_TOOLS_PER_CATALOG",
    "SHARED",
    "TOKENIZE",
    "WEIGHTS",
    "ToolRow",
    "catalog_tools",
    "index_row",
    "summary_stems",
    "term_rows",
]

WEIGHTS: tuple[float, ...] = (48.0, 0.56, 2.66, 1.69, 0.88)
"""bm25 weights of tool_words, product_words, description, params, param_docs (in that order).

All but the name's were tuned with the rerank's constants on 900 queries written apart from the
search (``heldout-4``..``-6`` of ``bench/tool_search.py``; docs/dataset.md). They are stored in the
table's ``rank`` configuration: changing them means bumping
``ToolIndexProjection.version``."""

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The FTS5 tokenizer of ``tool_fts`` (the search reads rows and words with it too)."""

FTS_COLUMNS: tuple[str, ...] = ("tool_words", "product_words", "description", "params", "param_docs")

MAX_TOOLS_PER_CATALOG = 65_536
"""A row's id is ``position * MAX_TOOLS_PER_CATALOG + index``: the same live and after any replay."""


def _name_text(name: str) -> str:
    words = split_words(name)
    whole = name.lower()
    return " ".join([whole, *words]) if len(words) > 1 else whole


@dataclass(frozen=True)
class ToolRow:
    """One tool as indexed (before the FTS columns are derived)."""

    upstream: str
    tool: str
    description: str
    input_schema: dict[str, Any]


def catalog_tools(upstream: str, tools_json: str) -> list[ToolRow] | None:
    """The usable tools of a catalogue: named, first occurrence of each name; None if not a list."""
    try:
        tools = json.loads(tools_json)
    except ValueError:
        return None
    if not isinstance(tools, list):
        return None
    seen: set[str] = set()
    out: list[ToolRow] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not name or name in seen:
            continue
        seen.add(name)
        description = tool.get("description")
        schema = tool.get("inputSchema")
        out.append(
            ToolRow(
                upstream,
                name,
                description if isinstance(description, str) else "",
                schema if isinstance(schema, dict) else {},
            )
        )
    return out


def _param_texts(schema: dict[str, Any]) -> tuple[str, str]:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return "", ""
    names: list[str] = []
    docs: list[str] = []
    for key, spec in props.items():
        names.append(_name_text(str(key)))
        if isinstance(spec, dict):
            for field in ("description", "title"):
                value = spec.get(field)
                if isinstance(value, str):
                    docs.append(value)
            enum = spec.get("enum")
            if isinstance(enum, list):
                docs.extend(str(v) for v in enum if isinstance(v, str | int | float))
    return " ".join(names), " ".join(docs)


def index_row(row: ToolRow, position: int, index: int, products: Sequence[str] = ()) -> tuple[Any, ...]:
    """The ``tool_index`` row of the ``index``-th tool of the catalogue event at ``position``
    (``products``: its upstream's product words)."""
    params, param_docs = _param_texts(row.input_schema)
    words = split_words(row.tool)
    stems = list(dict.fromkeys(stem(w) for w in words))
    objects = [s for s in stems if s not in OPERATIONS and s not in STOPWORDS and s not in products]
    return (
        position * MAX_TOOLS_PER_CATALOG + index,
        exposed_name(row.upstream, row.tool),
        row.upstream,
        row.tool,
        row.description,
        json.dumps(row.input_schema, ensure_ascii=False, separators=(",", ":")),
        _name_text(row.tool),
        " ".join(products),
        params,
        param_docs,
        *name_operation(words),
        " ".join(stems),
        " ".join(objects),
        " ".join(summary_stems(row.description)),
        position,
    )


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])[.!?](?:\s|$)|\n\s*\n")
SUMMARY_CHARS = 300


def summary_stems(description: str) -> list[str]:
    """The stems of a description's first sentence (at most ``SUMMARY_CHARS``), stop words left out."""
    text = description.strip()[:SUMMARY_CHARS]
    end = _SENTENCE_END.search(text)
    words = split_words(text[: end.start()] if end else text)
    return list(dict.fromkeys(stem(w) for w in words if w not in STOPWORDS))


LABEL, SHARED = 2, 1
"""``tool_terms.product``: a word of the upstream's NAME or server name; a word most of its tool
names share (``words.label_words``, ``words.shared_words``); 0: neither."""


def term_rows(
    upstream: str, tools: Sequence[ToolRow], labels: Iterable[str], shared: Iterable[str]
) -> list[tuple[Any, ...]]:
    """The ``tool_terms`` rows of an upstream: each name word's count of tools, product words marked
    (and counted 0 if no name holds them)."""
    counts: Counter[str] = Counter()
    for tool in tools:
        counts.update({stem(w) for w in split_words(tool.tool)})
    rows = {word: (word, upstream, n, 0) for word, n in counts.items()}
    for word in shared:
        rows[word] = (word, upstream, counts[word], SHARED)
    for word in labels:
        rows[word] = (word, upstream, counts.get(word, 0), LABEL)
    return list(rows.values())
