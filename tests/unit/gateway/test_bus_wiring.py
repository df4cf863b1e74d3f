"""The daemon's bus wiring is the table in ``gateway/wiring.py``: what runs subscribes exactly that,
and ``harness doctor --wiring`` prints it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.actors.bus import EventBus
from harness.events import registered
from harness.gateway.wiring import SUBSCRIPTIONS, connect
from in_process import running_daemon


def test_a_running_daemon_subscribes_exactly_what_the_wiring_table_declares(tmp_path: Path) -> None:
    config_path = tmp_path / "harness.toml"
    config_path.write_text("")
    declared = Counter(kind for entry in SUBSCRIPTIONS for kind in entry.events)

    async def scenario() -> dict[type, int]:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            return {kind: daemon.bus.subscribers(kind) for kind in registered().values()}

    subscribed = asyncio.run(scenario())
    assert {kind: n for kind, n in subscribed.items() if n} == dict(declared)


def test_wiring_a_bus_with_a_subscriber_the_table_does_not_name_is_refused() -> None:
    async def wire() -> None:
        connect(EventBus(lambda _event: None), {"stranger": lambda _event: None})

    with pytest.raises(ValueError, match="the bus wiring declares"):
        asyncio.run(wire())


def test_doctor_wiring_prints_each_subscription_with_the_thread_it_runs_on() -> None:
    run = [sys.executable, "-m", "harness", "doctor", "--wiring"]
    text = subprocess.run(run, capture_output=True, text=True, timeout=60, check=True).stdout
    as_json = json.loads(subprocess.run([*run, "--json"], capture_output=True, timeout=60, check=True).stdout)
    for entry in SUBSCRIPTIONS:
        names = ", ".join(kind.STORED_NAME for kind in entry.events)
        assert f"{names} -> {entry.subscriber} [{entry.runs_on}]" in text
    assert [row["subscriber"] for row in as_json["subscriptions"]] == [e.subscriber for e in SUBSCRIPTIONS]
