"""Skills: ``<skill_path>/<name>/SKILL.md`` files, indexed in an in-memory FTS5 table for
``search_skills`` and served whole by ``get_skill``.

The index lives in the daemon's memory, built at start and on reload (a few hundred skills index in
milliseconds); what agents retrieved is evidence, so it is the call log that records every search
and read, not this index.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw

from harness.gateway.library.front_matter import LibraryFileError, read_front_matter, text_field
from harness.search.ranking import match_expression, query_words
from harness.search.words import split_words

log = logging.getLogger("harness.skills")

SKILL_FILE = "SKILL.md"
WEIGHTS = (10.0, 4.0, 1.0)
"""bm25 weights of the name's words, the description and the body."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its front matter's name and description, its body, and its folder."""

    name: str
    description: str
    body: str
    folder: Path


class SkillLibrary:
    """The skills of some folders; ``problems`` says which files were left out and why."""

    def __init__(self, paths: Sequence[Path] = ()) -> None:
        self.skills: dict[str, Skill] = {}
        self.problems: list[str] = []
        for root in paths:
            self._scan(root)
        self._db = apsw.Connection(":memory:")
        self._db.execute(
            "CREATE VIRTUAL TABLE skill_fts USING fts5(name_words, description, body,"
            " tokenize='porter unicode61 remove_diacritics 2')"
        )
        with self._db:
            self._db.executemany(
                "INSERT INTO skill_fts(rowid, name_words, description, body) VALUES (?, ?, ?, ?)",
                [
                    (i, " ".join([s.name, *split_words(s.name)]), s.description, s.body)
                    for i, s in enumerate(self.skills.values())
                ],
            )
        self._by_row = list(self.skills.values())
        for problem in self.problems:
            log.warning("skill left out: %s", problem)

    def _scan(self, root: Path) -> None:
        if not root.is_dir():
            self.problems.append(f"{root}: not a folder")
            return
        for file in sorted(root.glob(f"*/{SKILL_FILE}")):
            try:
                data, body = read_front_matter(file)
                name = text_field(data, "name", file, required=False) or file.parent.name
                description = text_field(data, "description", file, required=True)
            except LibraryFileError as exc:
                self.problems.append(str(exc))
                continue
            if name in self.skills:
                self.problems.append(
                    f"{file}: a skill named {name!r} is already in {self.skills[name].folder}"
                )
                continue
            self.skills[name] = Skill(name, description, body, file.parent)

    def search(self, query: str, k: int) -> list[Skill]:
        """The ``k`` skills best matching ``query`` (read as plain words), best first."""
        words = query_words(query)
        if not words or not self.skills:
            return []
        sql = (
            f"SELECT rowid FROM skill_fts WHERE skill_fts MATCH ?"
            f" ORDER BY bm25(skill_fts, {', '.join(map(str, WEIGHTS))}), rowid LIMIT ?"
        )
        return [self._by_row[row[0]] for row in self._db.execute(sql, (match_expression(words), k))]

    def close(self) -> None:
        """Free the index."""
        self._db.close()
