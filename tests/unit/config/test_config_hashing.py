import hashlib
import json
import textwrap
from pathlib import Path

from harness.config import Config, config_hash, load_config

BASE = """
[mcp]
default_policy = "{default}"

[mcp.gitea]
argv = ["gitea-mcp"]
env_file = "gitea.env"
env = {{ TOKEN = "${{GITEA_TOKEN}}" }}
timeout = "{timeout}"

[mcp.qmd]
argv = ["{qmd}"]

[mcp_policy.reviewer]
servers = ["gitea"]
deny = ["{deny}"]

[harness.rev]
argv = ["agent"]
mcp_policy = "{policy}"

[harness.other]
argv = ["{other}"]
"""


def _load(tmp_path: Path, secret: str = "s1", **changes: str) -> Config:
    values = {"default": "", "timeout": "30s", "qmd": "qmd", "deny": "gitea__delete_*", "policy": "reviewer"}
    values["other"] = "other-agent"
    values.update(changes)
    (tmp_path / "gitea.env").write_text(f"GITEA_TOKEN={secret}\n", encoding="utf-8")
    path = tmp_path / "harness.toml"
    path.write_text(textwrap.dedent(BASE.format(**values)), encoding="utf-8")
    return load_config(path)


def test_the_config_hash_is_the_sha256_of_the_documented_canonical_json(tmp_path):
    config = _load(tmp_path)
    obj = {
        "harness": config.harnesses["rev"].model_dump(mode="json"),
        "policy": config.policies["reviewer"].model_dump(mode="json"),
        "upstreams": {"gitea": config.upstreams["gitea"].model_dump(mode="json", exclude={"project"})},
    }
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert config_hash(config, "rev") == hashlib.sha256(text.encode()).hexdigest()
    assert obj["upstreams"]["gitea"]["env_file"] == str(tmp_path / "gitea.env")
    assert obj["upstreams"]["gitea"]["env"] == {"TOKEN": "${GITEA_TOKEN}"}


def test_the_config_hash_is_deterministic_lowercase_hex(tmp_path):
    first = config_hash(_load(tmp_path), "rev")
    assert first == config_hash(_load(tmp_path), "rev")
    assert len(first) == 64
    assert first == first.lower()
    int(first, 16)


def test_the_config_hash_changes_with_the_harness_policy(tmp_path):
    assert config_hash(_load(tmp_path), "rev") != config_hash(_load(tmp_path, deny="gitea__merge_*"), "rev")


def test_the_config_hash_changes_with_a_reachable_upstream(tmp_path):
    assert config_hash(_load(tmp_path), "rev") != config_hash(_load(tmp_path, timeout="31s"), "rev")


def test_the_config_hash_ignores_an_unrelated_upstream_and_harness(tmp_path):
    before = config_hash(_load(tmp_path), "rev")
    assert before == config_hash(_load(tmp_path, qmd="qmd-v2", other="another-agent"), "rev")


def test_the_config_hash_covers_secrets_unresolved(tmp_path):
    assert config_hash(_load(tmp_path, secret="one"), "rev") == config_hash(
        _load(tmp_path, secret="two"), "rev"
    )


def test_a_harness_without_a_policy_hashes_no_policy_and_no_upstreams(tmp_path):
    config = _load(tmp_path, policy="")
    obj = {"harness": config.harnesses["rev"].model_dump(mode="json"), "policy": None, "upstreams": {}}
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert config_hash(config, "rev") == hashlib.sha256(text.encode()).hexdigest()


def test_the_default_policy_counts_for_a_harness_without_its_own(tmp_path):
    without = config_hash(_load(tmp_path, policy=""), "rev")
    with_default = config_hash(_load(tmp_path, policy="", default="reviewer"), "rev")
    assert with_default != without
    assert with_default != config_hash(_load(tmp_path), "rev")  # the harness table itself differs
