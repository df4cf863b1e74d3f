"""Skill and prompt folders: front matter, what is left out and why, search and rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.gateway.library.prompts import PromptError, PromptLibrary
from harness.gateway.library.skills import SkillLibrary


def _skill(root: Path, folder: str, text: str) -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "SKILL.md").write_text(text)


def test_skills_are_read_from_front_matter_and_found_by_the_words_of_their_description(tmp_path):
    _skill(
        tmp_path,
        "cal",
        "---\nname: calendar-invite\ndescription: Put an event on a calendar and invite people.\n---\nBody A\n",
    )
    _skill(
        tmp_path,
        "deploy",
        "---\ndescription: >\n  Roll out a service to staging,\n  then production.\n---\nBody B\n",
    )
    _skill(tmp_path, "notes", "---\nname: meeting-notes\ndescription: Summarise a meeting transcript.\n---\n")
    library = SkillLibrary([tmp_path])
    assert library.problems == []
    assert set(library.skills) == {"calendar-invite", "deploy", "meeting-notes"}  # no name: the folder's
    assert library.skills["deploy"].description == "Roll out a service to staging, then production."
    assert library.skills["calendar-invite"].body == "Body A\n"
    assert library.search("schedule an event for the team", 3)[0].name == "calendar-invite"
    assert library.search("deploy to production", 3)[0].name == "deploy"
    assert library.search("", 3) == [] and library.search("zzz qqq", 3) == []
    library.close()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter at all\n", "needs 'description'"),
        ("---\nname: x\n", "never closed"),
        ("---\n: : :\n---\n", "not YAML"),
        ("---\n- a list\n---\n", "mapping"),
        ("---\nname: x\ndescription: 12\n---\n", "needs 'description'"),
    ],
)
def test_a_bad_skill_file_is_left_out_with_its_file_and_reason(tmp_path, text, reason):
    _skill(tmp_path, "bad", text)
    _skill(tmp_path, "good", "---\ndescription: Fine.\n---\n")
    library = SkillLibrary([tmp_path, tmp_path / "missing"])
    assert set(library.skills) == {"good"}
    assert any(reason in p and "bad/SKILL.md" in p for p in library.problems), library.problems
    assert any("missing: not a folder" in p for p in library.problems)


def test_a_second_skill_of_the_same_name_is_left_out(tmp_path):
    for root in ("a", "b"):
        _skill(tmp_path / root, "s", "---\nname: same\ndescription: One.\n---\n")
    library = SkillLibrary([tmp_path / "a", tmp_path / "b"])
    assert list(library.skills) == ["same"] and library.skills["same"].folder == tmp_path / "a" / "s"
    assert "already in" in library.problems[0]


def test_prompts_are_served_in_the_reserved_namespace_with_their_arguments_filled_in(tmp_path):
    (tmp_path / "review.md").write_text(
        "---\ndescription: Review.\narguments:\n  - name: focus\n    required: true\n  - name: tone\n---\n"
        "Review for {{focus}}{{ tone }}.\n"
    )
    (tmp_path / "plain.md").write_text("Just text {{unknown}}.\n")
    (tmp_path / "bad__name.md").write_text("x")
    (tmp_path / "broken.md").write_text("---\narguments: 3\n---\n")
    library = PromptLibrary([tmp_path])
    assert [p["name"] for p in library.listed()] == ["harness__plain", "harness__review"]
    assert library.listed()[1]["arguments"] == [
        {"name": "focus", "required": True},
        {"name": "tone", "required": False},
    ]
    got = library.get("harness__review", {"focus": "tests"})
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Review for tests.\n"}}]
    assert library.get("harness__plain", None)["messages"][0]["content"]["text"] == "Just text .\n"
    with pytest.raises(PromptError, match="needs argument 'focus'"):
        library.get("harness__review", {})
    with pytest.raises(PromptError, match="must be a string"):
        library.get("harness__review", {"focus": 3})
    with pytest.raises(PromptError, match="no prompt named"):
        library.get("review", {})
    assert len(library.problems) == 2  # bad__name (no __ in a stem) and broken (arguments not a list)
