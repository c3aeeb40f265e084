"""The official MCP SDK's Python client against `/mcp` of `toolhost serve`.

Usage: http_client.py URL TOKEN
Prints one JSON object: the tools listed and the result of one call.
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
    async with Client(streamable_http_client(url, http_client=http)) as client:
        tools = await client.list_tools()
        good = await client.call_tool("get_weather", {"location": "Tromsø"})
        print(
            json.dumps(
                {
                    "tools": [t.name for t in tools.tools],
                    "good": {"isError": good.is_error, "text": [c.text for c in good.content]},
                }
            )
        )


asyncio.run(main())
