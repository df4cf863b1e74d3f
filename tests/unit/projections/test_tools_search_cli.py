"""`harness tools search`: reads the store's tool index with the daemon stopped."""

from __future__ import annotations

import json

from projection_support import tool, write_log
from tests_support import catalog

from harness.main import main

CONFIG = """
[mcp.git]
argv = ["git-mcp"]
[mcp.web]
argv = ["web-mcp"]
[mcp_policy.narrow]
servers = ["git", "web"]
tools = ["git__*", "web__fetch*"]
deny = ["git__git_commit"]
[harness.alice]
argv = ["agent"]
mcp_policy = "narrow"
[harness.nobody]
argv = ["agent"]
"""


def setup(tmp_path):
    state = tmp_path / "state"
    write_log(
        state / "harness.db",
        [
            catalog("git", [tool("git_commit", "Record changes"), tool("git_log", "Show the commit log")]),
            catalog("web", [tool("fetch_url", "Fetch a web page"), tool("search_web", "Search the web")]),
        ],
    )
    config = tmp_path / "harness.toml"
    config.write_text(CONFIG)
    return ["--state-dir", str(state), "--config", str(config)]


def test_search_prints_a_json_array_best_first(tmp_path, capsys):
    opts = setup(tmp_path)
    assert main(["tools", "search", "commit", "changes", "--json", *opts]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["name"] == "git__git_commit"
    assert set(hits[0]) >= {"name", "upstream", "tool", "description", "inputSchema"}


def test_harness_restricts_to_its_policy(tmp_path, capsys):
    opts = setup(tmp_path)
    assert (
        main(["tools", "search", "commit", "web", "fetch", "search", "--harness", "alice", "--json", *opts])
        == 0
    )
    names = {h["name"] for h in json.loads(capsys.readouterr().out)}
    assert names == {"git__git_log", "web__fetch_url"}  # deny beats tools; tools narrows servers
    assert main(["tools", "search", "commit", "--harness", "nobody", "--json", *opts]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_plain_output_and_errors(tmp_path, capsys):
    opts = setup(tmp_path)
    assert main(["tools", "search", "fetch", "-k", "1", *opts]) == 0
    assert capsys.readouterr().out.startswith("web__fetch_url")
    assert main(["tools", "search", "x", "--harness", "ghost", *opts]) == 1
    assert "no harness 'ghost'" in capsys.readouterr().err
    assert main(["tools", "search", "x", "--state-dir", str(tmp_path / "none")]) == 1


def test_search_prints_no_escape_sequence_or_bidi_control_from_a_description(tmp_path, capsys):
    state = tmp_path / "state"
    described = tool("wipe_screen", "ansi \x1b[2J clear \u202eeman\x9b31m")
    write_log(state / "harness.db", [catalog("git", [described])])
    config = tmp_path / "harness.toml"
    config.write_text(CONFIG)
    assert main(["tools", "search", "clear", "--state-dir", str(state), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "git__wipe_screen" in out and "ansi [2J clear eman31m" in out
    assert not any(c in out for c in "\x1b\u202e\x9b")
