"""The official MCP SDK's Python client against `/mcp` of `toolhost serve`, calling a tool that
needs a secret: it follows the URL-mode elicitation the way a person would, by giving the secret
on the thread's page (here: the same HTTP API the page uses), then accepts.

Usage: http_client_secret.py URL TOKEN TOOL VARIABLE SECRET
Prints one JSON object: what was asked, how giving the secret went, and the call's result.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult


async def main() -> None:
    url, token, tool, variable, secret = sys.argv[1:6]
    base = url.removesuffix("/mcp")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    asked = []

    async def on_elicit(context, params):
        asked.append({"mode": params.mode, "url": getattr(params, "url", None),
                      "message": params.message})
        if params.mode != "url":
            return ElicitResult(action="decline")
        thread = params.url.split("#/t/", 1)[1]
        given = await http.post(
            f"{base}/v1/threads/{thread}/variables/{params.elicitation_id}",
            json={"secrets": {variable: secret}},
        )
        asked[-1]["given"] = given.status_code
        return ElicitResult(action="accept")

    # The 2025-11-25 protocol (`initialize`), under which a server asks the client; under
    # 2026-07-28 it would answer `input_required`, which toolhost does not send yet.
    async with Client(
        streamable_http_client(url, http_client=http),
        elicitation_callback=on_elicit,
        mode="legacy",
    ) as client:
        found = await client.call_tool(tool, {})
        print(
            json.dumps(
                {
                    "asked": asked,
                    "isError": found.is_error,
                    "text": [c.text for c in found.content],
                }
            )
        )


asyncio.run(main())
