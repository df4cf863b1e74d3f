"""A minimal W3C WebDriver client for headless Chromium (Debian's chromium and chromium-driver):
enough to open a page, run a script in it and take a screenshot, with no Python dependency."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from typing import Any

from support import free_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


class HeadlessChromium:
    """One chromedriver process and one browser session."""

    def __init__(self, width: int = 1100, height: int = 800) -> None:
        assert CHROMIUM and CHROMEDRIVER, "chromium and chromedriver are needed"
        self.port = free_port()
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                self._call("GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        options = {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}"],
        }
        capabilities = {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}
        self.session = self._call("POST", "/session", {"capabilities": capabilities})["sessionId"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())["value"]

    def open(self, url: str) -> None:
        """Navigate to ``url`` (returns once the page has loaded)."""
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def run(self, script: str) -> Any:
        """The value of ``script`` (a function body) run in the page."""
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})

    def screenshot(self) -> bytes:
        """The viewport as PNG."""
        return base64.b64decode(self._call("GET", f"/session/{self.session}/screenshot"))

    def close(self) -> None:
        """End the browser session and the driver."""
        try:
            self._call("DELETE", f"/session/{self.session}")
        finally:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait(10)
