"""The official MCP SDK's Python client calls one tool on `/mcp` of `toolhost serve`, then
reads the files its result links to, lists the session's files, and tries one URI more.

Usage: http_client_call.py URL TOKEN TOOL OTHER_URI
Prints one JSON object: the call's result as the protocol writes it ("result"), what each
resource link read gave ("read", by URI), the files listed ("listed") and the error reading
OTHER_URI gave ("other").
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def dumped(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    url, token, tool, other = sys.argv[1:5]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        result = dumped(await client.call_tool(tool, {}))
        read = {}
        for block in result["content"]:
            if block["type"] == "resource_link":
                read[block["uri"]] = dumped(await client.read_resource(block["uri"]))
        listed = dumped(await client.list_resources())
        try:
            await client.read_resource(other)
            refused = None
        except Exception as e:  # the server's error, as the SDK raises it
            refused = str(e)
        print(json.dumps({"result": result, "read": read, "listed": listed, "other": refused}))


asyncio.run(main())
