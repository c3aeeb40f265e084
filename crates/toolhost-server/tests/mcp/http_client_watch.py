"""The official MCP SDK's Python client on `/mcp` of `toolhost serve`, waiting to be told that
the tool list changed (the 2025-11-25 protocol: the server sends the notification itself).

Usage: http_client_watch.py URL TOKEN
Prints one JSON line with the tools listed first ("before"), then, once the server said the
list changed (within 60 s), another with the tools listed again ("after").
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token = sys.argv[1:3]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    changed = asyncio.Event()

    async def on_message(message) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with Client(
        streamable_http_client(url, http_client=http), message_handler=on_message, mode="legacy"
    ) as client:
        before = await client.list_tools()
        print(json.dumps({"before": [t.name for t in before.tools]}), flush=True)
        await asyncio.wait_for(changed.wait(), 60)
        after = await client.list_tools()
        print(json.dumps({"after": [t.name for t in after.tools]}), flush=True)


asyncio.run(main())
