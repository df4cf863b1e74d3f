"""Tune the tool search's constants by coordinate descent, optionally cross-validated.

What is tuned: the rerank's constants of ``harness.search.ranking`` (``PARAMETERS``) and the
bm25 column weights but the name's (``WEIGHTS[1:]``), each in turn multiplied by 0, 0.5, 0.75,
1.33 and 2 while the score (MRR@10 + R@5 / 2 over the tuning queries) rises, three rounds at most.
The index and the query sets are ``tool_search.py``'s.

    python bench/tune_search.py --sets heldout-4,heldout-5,heldout-6            # tune on all three
    python bench/tune_search.py --sets heldout-4,heldout-5,heldout-6 --cross    # tune on two, score the third

Cross-validation prints, for each set held out, its R@5 / MRR@10 with the constants as they are and
with those tuned on the other sets: what tuning on such sets does for a set it never saw. The figures
of the 2026-12-03 retuning (bench/README.md) were printed by it (then with the name's weight free
too). It only prints: the constants in ``search/ranking.py`` are changed by hand (the weights, in
``search/documents.py``, are stored in the index, so changing them means bumping
``ToolIndexProjection.version``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import apsw

from harness.search import documents, ranking
from tool_search import CATALOGS, K, build, load_catalog_files, load_set, metrics, tool_names

PARAMETERS = (
    "NAME_BOOST",
    "PRODUCT_BOOST",
    "PRODUCT_SHARPNESS",
    "SHARED_SHARPNESS",
    "PRECISION_BOOST",
    "EMPTY_PRECISION",
    "SUMMARY_CREDIT",
    "OPERATION_BOOST",
    "PLURAL_BOOST",
    "BM25_BOOST",
    "UNNAMED_RARITY",
)
WEIGHT_NAMES = tuple(f"weight {column}" for column in documents.FTS_COLUMNS)
FACTORS = (0.0, 0.5, 0.75, 1.33, 2.0)

Values = dict[str, float]


def current() -> Values:
    """The constants as the code has them."""
    values = {name: float(getattr(ranking, name)) for name in PARAMETERS}
    values.update(zip(WEIGHT_NAMES, documents.WEIGHTS, strict=True))
    return values


def score(
    conn: apsw.Connection, known: frozenset[str], rows: Sequence[dict[str, Any]], values: Values
) -> tuple[float, float]:
    """R@5 and MRR@10 of ``rows`` with ``values`` set (the module's constants are left so)."""
    for name in PARAMETERS:
        setattr(ranking, name, values[name])
    weights = tuple(values[name] for name in WEIGHT_NAMES)
    custom = None if weights == tuple(documents.WEIGHTS) else weights
    ranked = [
        [hit.name for hit in ranking.search(conn, row["query"], k=K, allowed=known, weights=custom)]
        for row in rows
    ]
    return metrics(ranked, rows)


def tune(
    conn: apsw.Connection, known: frozenset[str], rows: Sequence[dict[str, Any]], start: Mapping[str, float]
) -> Values:
    """Coordinate descent from ``start`` on ``rows``; the name's bm25 weight stays as it is."""

    def objective(values: Values) -> float:
        r5, mrr = score(conn, known, rows, values)
        return mrr + 0.5 * r5

    best = dict(start)
    best_score = objective(best)
    for round_ in range(3):
        improved = False
        for name in (*PARAMETERS, *WEIGHT_NAMES[1:]):
            for factor in FACTORS:
                candidate = dict(best)
                candidate[name] = round(best[name] * factor, 4) if best[name] else (0.1 if factor else 0.0)
                value = objective(candidate)
                if value > best_score + 1e-9:
                    best, best_score, improved = candidate, value, True
        print(f"  round {round_ + 1}: score {best_score:.4f}", file=sys.stderr)
        if not improved:
            break
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sets", required=True, help="tuning query sets, comma-separated (tool_search.py's names)"
    )
    ap.add_argument(
        "--cross", action="store_true", help="hold each set out in turn: tune on the others, score it"
    )
    a = ap.parse_args()
    sets = {name: load_set(name) for name in a.sets.split(",") if name}
    catalogs, servers = load_catalog_files(CATALOGS)
    conn = build(catalogs, servers=servers)
    known = tool_names(conn)
    start = current()
    if a.cross:
        for held, held_rows in sets.items():
            rows = [row for name, set_rows in sets.items() if name != held for row in set_rows]
            tuned = tune(conn, known, rows, start)
            before, after = score(conn, known, held_rows, start), score(conn, known, held_rows, tuned)
            print(
                f"held {held}: as is {before[0]:.3f}/{before[1]:.3f}"
                f"  tuned on the others {after[0]:.3f}/{after[1]:.3f}"
            )
        return 0
    tuned = tune(conn, known, [row for rows in sets.values() for row in rows], start)
    for name, rows in sets.items():
        before, after = score(conn, known, rows, start), score(conn, known, rows, tuned)
        print(f"{name}: as is {before[0]:.3f}/{before[1]:.3f}  tuned {after[0]:.3f}/{after[1]:.3f}")
    changed = {name: value for name, value in tuned.items() if value != start[name]}
    print(
        "changed:",
        ", ".join(f"{name} {start[name]:g} -> {value:g}" for name, value in changed.items()) or "nothing",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
