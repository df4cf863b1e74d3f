"""Configuration the model accepts but that cannot work: refused at load with file, key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import ConfigError, load_config


def error_of(tmp_path: Path, text: str) -> ConfigError:
    file = tmp_path / "harness.toml"
    file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(file)
    assert caught.value.file == str(file)
    return caught.value


def test_headers_on_a_stdio_upstream_are_refused_naming_the_key(tmp_path):
    error = error_of(tmp_path, '[mcp.git]\nargv = ["git-mcp"]\nheaders = { X-Token = "t" }\n')
    assert error.key == "mcp.git.headers" and "only an HTTP upstream" in error.reason


@pytest.mark.parametrize("url", ["ftp://x", "file:///tmp/mcp", "127.0.0.1:9000/mcp", "http://"])
def test_an_upstream_url_must_be_http_or_https(tmp_path, url):
    error = error_of(tmp_path, f'[mcp.web]\nurl = "{url}"\n')
    assert (error.key, error.reason) == (
        "mcp.web.url",
        "must be an http:// or https:// URL (Streamable HTTP)",
    )


@pytest.mark.parametrize("field", ["tools", "deny"])
def test_a_policy_glob_naming_an_upstream_outside_its_servers_is_refused(tmp_path, field):
    text = f'[mcp.git]\nargv = ["g"]\n[mcp_policy.dev]\nservers = ["git"]\n{field} = ["git__*", "gitt__*"]\n'
    error = error_of(tmp_path, text)
    assert error.key == f"mcp_policy.dev.{field}"
    assert error.reason == "'gitt__*': no upstream 'gitt' in servers (git): it matches no tool"


def test_policy_globs_with_a_wildcard_upstream_part_and_http_urls_are_accepted(tmp_path):
    file = tmp_path / "harness.toml"
    file.write_text(
        '[mcp.git]\nargv = ["g"]\n[mcp.web]\nurl = "https://example.org/mcp"\nheaders = { X-A = "b" }\n'
        '[mcp_policy.dev]\nservers = ["git", "web"]\ntools = ["*__read_*", "g?t__*", "[gw]*", "web__x"]\n'
    )
    assert load_config(file).policies["dev"].tools == ("*__read_*", "g?t__*", "[gw]*", "web__x")
