"""Durability tests: real processes killed with SIGKILL."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "durability: kill -9 of a writer process under load (about 20 s)")
