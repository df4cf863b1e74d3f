"""Harness gateway: one daemon that runs each MCP server once and gives every agent its own endpoint.

``import harness`` stays cheap (the ``harness mcp`` bridge starts at every agent launch): the public
API is loaded lazily on first attribute access.
"""

__version__ = "0.1.0"

_LAZY = {
    "load_config": "harness.config",
    "Config": "harness.config",
    "open_store": "harness.reading",
}

__all__ = ["Config", "__version__", "load_config", "open_store"]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
