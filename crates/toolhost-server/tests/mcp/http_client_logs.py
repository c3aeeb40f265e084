"""The official MCP SDK's Python client calls one tool on `/mcp` and keeps the log messages
the server sends while the call runs.

Usage: http_client_logs.py URL TOKEN TOOL MODE LEVEL
MODE is `legacy` (2025-11-25: `logging/setLevel` LEVEL first, unless LEVEL is `none`) or
`modern` (2026-07-28: each request opts in at LEVEL through its `_meta`, unless `none`).
Prints one JSON object: the call's text ("text") and the log messages ("logs": level, logger,
data).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token, tool, mode, level = sys.argv[1:6]
    logs = []

    async def keep(params) -> None:
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    options = {"logging_callback": keep, "mode": "legacy" if mode == "legacy" else "auto"}
    if mode == "modern" and level != "none":
        options["log_level"] = level
    async with Client(streamable_http_client(url, http_client=http), **options) as client:
        if mode == "legacy" and level != "none":
            await client.set_logging_level(level)
        result = await client.call_tool(tool, {})
        print(json.dumps({"text": [c.text for c in result.content], "logs": logs}))


asyncio.run(main())
