"""The official MCP SDK's Python client calls one tool on `/mcp` of `toolhost serve`.

Usage: http_client_call.py URL TOKEN TOOL
Prints the call's result as the protocol writes it (JSON).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token, tool = sys.argv[1:4]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool(tool, {})
        print(json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)))


asyncio.run(main())
