"""One holder of the running configuration: a reload switches what every part of the daemon reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

from in_process import running_daemon


def test_after_a_reload_the_daemon_the_spawner_and_the_recorder_read_the_same_new_configuration(
    tmp_path: Path,
) -> None:
    env_file = tmp_path / "up.env"
    env_file.write_text("API_KEY=held-secret-value-1\n")
    config_path = tmp_path / "harness.toml"
    config_path.write_text('[mcp]\ncall_log_args = "redacted"\n')

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            assert daemon.spawner is not None
            before = daemon.holder.current
            assert daemon.recorder.stored_text("held-secret-value-1") == "held-secret-value-1"
            config_path.write_text(
                f'[mcp]\ncall_log_args = "redacted"\n[mcp.up]\nargv = ["true"]\nenv_file = "{env_file}"\n'
            )
            await daemon.reload()
            now = daemon.holder.current
            assert now is not before and now.config is daemon.config is daemon.spawner.config
            assert daemon.known is now.known
            assert daemon.recorder.stored_text("held-secret-value-1") != "held-secret-value-1"

    asyncio.run(scenario())
