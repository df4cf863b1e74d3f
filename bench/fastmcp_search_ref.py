"""FastMCP's own BM25 tool search on a given tool set and query set (the reference for context_economy.py).

Run by ``bench/context_economy.py`` with the interpreter of a separate virtualenv holding FastMCP
(``/tmp/fastmcp-venv/bin/python``), so FastMCP's dependencies never meet the project's. Not imported
by the project, and it imports nothing from it.

Input (a JSON file, argv[1]): ``{"tools": [{"name", "description", "inputSchema"}], "queries": [str],
"k": int, "rounds": int, "server_rounds": int}``. Output (stdout): one JSON object with FastMCP's
version, each query's ranked tool names, and per-search times in ms for three paths:

- ``search``: ``BM25SearchTransform._search(tools, query)``, the method its ``search_tools`` tool
  calls (catalogue-hash staleness check + ``_BM25Index.query``; the index is built on the first call
  and reused while the catalogue is unchanged, as in a server);
- ``index``: ``_BM25Index.query`` alone (the ranking without the staleness check);
- ``server``: ``search_tools`` called through FastMCP's in-memory ``Client`` on a ``FastMCP`` server
  holding the tools with ``add_transform(BM25SearchTransform(max_results=k))`` (MCP round trip,
  catalogue listing through the transform pipeline, result serialisation).

Rankings are those of ``search`` (``rankings``) and of the ``server`` path (``server_rankings``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import warnings
from importlib.metadata import version


def main() -> int:
    warnings.simplefilter("ignore")
    from fastmcp import Client, FastMCP
    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool

    with open(sys.argv[1]) as f:
        spec = json.load(f)
    k = int(spec.get("k", 10))
    rounds = int(spec.get("rounds", 5))
    server_rounds = int(spec.get("server_rounds", 1))
    queries: list[str] = spec["queries"]
    tools = [
        Tool(name=t["name"], description=t.get("description") or None, parameters=t.get("inputSchema") or {})
        for t in spec["tools"]
    ]

    async def direct() -> tuple[list[list[str]], list[float], list[float]]:
        transform = BM25SearchTransform(max_results=k)
        rankings = [[t.name for t in await transform._search(tools, q)] for q in queries]  # builds + warms
        search_ms: list[float] = []
        index_ms: list[float] = []
        for _ in range(rounds):
            for q in queries:
                t0 = time.perf_counter()
                await transform._search(tools, q)
                search_ms.append((time.perf_counter() - t0) * 1000)
            for q in queries:
                t0 = time.perf_counter()
                transform._index.query(q, k)
                index_ms.append((time.perf_counter() - t0) * 1000)
        return rankings, search_ms, index_ms

    async def served() -> tuple[list[list[str]], list[float]]:
        server = FastMCP("ref")
        for tool in tools:
            server.add_tool(tool)
        server.add_transform(BM25SearchTransform(max_results=k))
        rankings: list[list[str]] = []
        server_ms: list[float] = []
        async with Client(server) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed} == {"search_tools", "call_tool"}, [t.name for t in listed]
            for q in queries:  # warm (builds the index) and collect rankings
                result = await client.call_tool("search_tools", {"query": q})
                rankings.append(_names(result))
            for _ in range(server_rounds):
                for q in queries:
                    t0 = time.perf_counter()
                    await client.call_tool("search_tools", {"query": q})
                    server_ms.append((time.perf_counter() - t0) * 1000)
        return rankings, server_ms

    rankings, search_ms, index_ms = asyncio.run(direct())
    out = {
        "fastmcp": version("fastmcp"),
        "class": f"{BM25SearchTransform.__module__}.{BM25SearchTransform.__qualname__}",
        "tools": len(tools),
        "rankings": rankings,
        "search_ms": search_ms,
        "index_ms": index_ms,
    }
    if server_rounds > 0:
        server_rankings, server_ms = asyncio.run(served())
        out["server_ms"] = server_ms
        out["server_rankings"] = server_rankings
    json.dump(out, sys.stdout)
    return 0


def _names(result: object) -> list[str]:
    """Tool names out of a ``search_tools`` result (JSON list of tool objects)."""
    data = getattr(result, "structured_content", None)
    if isinstance(data, dict) and "result" in data:
        data = data["result"]
    if not isinstance(data, list):
        content = getattr(result, "content", [])
        text = "".join(getattr(c, "text", "") for c in content)
        data = json.loads(text) if text.strip().startswith("[") else []
    return [t["name"] for t in data if isinstance(t, dict) and "name" in t]


if __name__ == "__main__":
    sys.exit(main())
