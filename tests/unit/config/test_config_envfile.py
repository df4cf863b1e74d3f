from pathlib import Path

import pytest

from harness.config import (
    ConfigError,
    UpstreamConfig,
    parse_env_file,
    resolve_upstream_env,
    resolve_upstream_headers,
)


def _env_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "secrets.env"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_env_file_reads_key_value_lines_with_export_and_quotes(tmp_path):
    path = _env_file(
        tmp_path,
        "# a comment\n"
        "\n"
        "PLAIN=value\n"
        "export EXPORTED=yes\n"
        'DOUBLE="two words"\n'
        "SINGLE='it has # and = in it'\n"
        "  SPACED = padded  \n"
        "EMPTY=\n"
        "   # an indented comment\n"
        "PLAIN=later wins\n",
    )
    assert parse_env_file(path) == {
        "PLAIN": "later wins",
        "EXPORTED": "yes",
        "DOUBLE": "two words",
        "SINGLE": "it has # and = in it",
        "SPACED": "padded",
        "EMPTY": "",
    }


def test_a_malformed_env_line_names_the_file_and_line_but_not_its_content(tmp_path):
    path = _env_file(tmp_path, "GOOD=1\n# comment\nhunter2-not-an-assignment\n")
    with pytest.raises(ConfigError) as caught:
        parse_env_file(path)
    assert caught.value.file == str(path)
    assert "line 3" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_an_unterminated_quote_in_an_env_file_is_refused(tmp_path):
    path = _env_file(tmp_path, 'TOKEN="abc\n')
    with pytest.raises(ConfigError, match="line 1: unterminated quote"):
        parse_env_file(path)


def test_a_missing_env_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        parse_env_file(tmp_path / "absent.env")


def test_upstream_env_resolves_from_the_env_file_and_ignores_os_environ(tmp_path, monkeypatch):
    monkeypatch.setenv("GITEA_TOKEN", "from-the-daemon-environment")
    monkeypatch.setenv("ONLY_IN_OS", "leaked")
    path = _env_file(tmp_path, "GITEA_TOKEN=from-the-file\nHOST=gitea.example.com\n")
    up = UpstreamConfig(
        name="gitea",
        argv=("gitea-mcp",),
        env_file=path,
        env={"TOKEN": "${GITEA_TOKEN}", "URL": "https://${HOST}/api", "MODE": "stdio"},
    )
    assert resolve_upstream_env(up) == {
        "TOKEN": "from-the-file",
        "URL": "https://gitea.example.com/api",
        "MODE": "stdio",
    }
    leaky = UpstreamConfig(name="gitea", argv=("gitea-mcp",), env_file=path, env={"X": "${ONLY_IN_OS}"})
    with pytest.raises(ConfigError, match=r"\$\{ONLY_IN_OS\} is not defined in"):
        resolve_upstream_env(leaky)


def test_resolving_a_name_missing_from_the_env_file_names_the_key_and_no_secret(tmp_path):
    path = _env_file(tmp_path, "OTHER=sup3r-s3cret\n")
    up = UpstreamConfig(name="gitea", argv=("x",), env_file=path, env={"TOKEN": "${GITEA_TOKEN}"})
    with pytest.raises(ConfigError) as caught:
        resolve_upstream_env(up)
    assert caught.value.key == "mcp.gitea.env.TOKEN"
    assert "GITEA_TOKEN" in caught.value.reason
    assert "sup3r-s3cret" not in str(caught.value)


def test_resolving_a_reference_without_an_env_file_is_refused():
    up = UpstreamConfig(name="gitea", argv=("x",), env={"TOKEN": "${GITEA_TOKEN}"})
    with pytest.raises(ConfigError, match=r"uses \$\{GITEA_TOKEN\} but has no env_file"):
        resolve_upstream_env(up)


def test_env_values_without_references_need_no_env_file():
    up = UpstreamConfig(name="gitea", argv=("x",), env={"MODE": "stdio", "PRICE": "$5"})
    assert resolve_upstream_env(up) == {"MODE": "stdio", "PRICE": "$5"}


def test_upstream_headers_resolve_from_the_env_file(tmp_path):
    path = _env_file(tmp_path, "OUTLINE_TOKEN='tok'\n")
    up = UpstreamConfig(
        name="outline",
        url="https://o/mcp",
        env_file=path,
        headers={"Authorization": "Bearer ${OUTLINE_TOKEN}"},
    )
    assert resolve_upstream_headers(up) == {"Authorization": "Bearer tok"}
    assert resolve_upstream_env(up) == {}
