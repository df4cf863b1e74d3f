"""The live status page (issue 10): rendered by a real headless Chromium from the daemon's metrics
listener, it shows upstreams, harnesses, recent calls — and, reloading itself, shows a killed
upstream as down within 2 s. The screenshot is kept beside the test's files and its path printed."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from webdriver import CHROMEDRIVER, CHROMIUM, HeadlessChromium

from harness.demo.upstream import __file__ as DEMO_UPSTREAM
from support import PY, free_port, probe_argv, steps, toml_list, wait_until

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,  # a browser and a daemon, ~7 s
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER), reason="Debian's chromium and chromium-driver are not installed"
    ),
]

STATE_CELL = (
    "const c = document.querySelector('[data-upstream=\"demo\"] td:nth-child(2)'); return c && c.textContent;"
)


def test_the_status_page_renders_in_chromium_and_shows_a_killed_upstream_down_within_2_s(
    start_daemon, tmp_path
):
    port = free_port()
    called, done = tmp_path / "called", tmp_path / "done"
    plan = steps(
        {"op": "call", "name": "demo__echo", "arguments": {"text": "hello"}},
        {"op": "touch", "path": str(called)},
        {"op": "wait_file", "path": str(done), "timeout": 60},
    )
    agent = probe_argv(tmp_path / "agent.json", "--steps", plan)
    daemon = start_daemon(
        f'[mcp]\nmetrics_listen = "127.0.0.1:{port}"\n\n'
        f'[mcp.demo]\nargv = {toml_list([PY, DEMO_UPSTREAM])}\nrestart_delay = "30s"\n\n'
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.agent]\nargv = {toml_list(agent)}\nmcp_policy = "p"\n'
    )
    wait_until(called.exists, timeout=30, message="the agent's call")
    upstream_pid = json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["demo"]["pid"]
    browser = HeadlessChromium()
    try:
        browser.open(f"http://127.0.0.1:{port}/")
        assert browser.run("return document.title;") == "Harness gateway"
        assert browser.run(STATE_CELL) == "up"
        harness_row = (
            "return [...document.querySelectorAll('[data-harness=\"agent\"] td')].map(c => c.textContent);"
        )
        name, state, sessions, schema = browser.run(harness_row)
        assert (name, state, sessions) == ("agent", "running", "1") and int(schema.replace(",", "")) > 0
        call_row = (
            "return [...document.querySelectorAll('#calls tr:nth-child(2) td')].map(c => c.textContent);"
        )
        _time, who, tool, outcome, latency = browser.run(call_row)
        assert (who, tool, outcome) == ("agent", "demo__echo", "ok") and float(latency) >= 0
        (tmp_path / "status-up.png").write_bytes(browser.screenshot())

        os.kill(upstream_pid, signal.SIGKILL)
        killed = time.monotonic()
        shown = ""
        while time.monotonic() - killed < 5:  # the page reloads itself: the test never reloads it
            shown = browser.run(STATE_CELL) or ""
            if shown.startswith("down"):
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - killed
        png = browser.screenshot()
    finally:
        browser.close()
        done.touch()
    shot = tmp_path / "status-down.png"
    shot.write_bytes(png)
    print(f"status page screenshots: {tmp_path / 'status-up.png'} {shot} (down shown after {elapsed:.2f} s)")
    assert png.startswith(b"\x89PNG")
    assert shown.startswith("down"), shown
    assert elapsed < 2.0, elapsed
