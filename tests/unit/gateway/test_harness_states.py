"""A harness's state is a word of ``vocabulary.HarnessState`` through its whole life."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import get_args

from harness.vocabulary import HarnessRestart, HarnessState
from in_process import running_daemon
from support import await_until

STATES = set(get_args(HarnessState))


def test_each_state_a_harness_passes_through_is_a_word_of_the_vocabulary(tmp_path: Path):
    config_path = tmp_path / "harness.toml"
    config_path.write_text(
        '[harness.sleeper]\nargv = ["sleep", "60"]\n[harness.done]\nargv = ["true"]\n'
        "[harness.idle]\nautostart = false\n"
    )
    seen: list[str] = []

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            procs = daemon.spawner
            assert procs is not None
            await await_until(lambda: procs.state_of("done") == "exited", timeout=10)
            seen.extend(procs.state_of(n) for n in ("sleeper", "done", "idle"))
            await procs.stop(["sleeper"])
            seen.append(procs.state_of("sleeper"))

    asyncio.run(scenario())
    assert seen == ["running", "exited", "stopped", "stopped"]
    assert set(seen) <= STATES and set(get_args(HarnessRestart)) <= STATES
