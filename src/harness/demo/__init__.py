"""The built-in demo: an upstream MCP server, demo agents, and ``harness demo``."""
