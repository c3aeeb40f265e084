"""The official MCP SDK's Python client against `/mcp` of `toolhost serve`, under the protocol
it prefers (2026-07-28, where a server asks within a call with `input_required` results and the
client retries): it approves `pay`, gives REGION for `locate` in a form, and for `unlock` gives
the secret DOOR_CODE on the thread's page (here: the HTTP API the page uses).

Usage: http_client_rounds.py URL TOKEN SECRET
Prints one JSON object: the protocol, what was asked, and each call's result.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult


async def main() -> None:
    url, token, secret = sys.argv[1:4]
    base = url.removesuffix("/mcp")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    asked = []

    async def on_elicit(context, params):
        if params.mode == "url":
            asked.append({"mode": "url", "message": params.message})
            thread = params.url.split("#/t/", 1)[1]
            await http.post(
                f"{base}/v1/threads/{thread}/variables/{params.elicitation_id}",
                json={"secrets": {"DOOR_CODE": secret}},
            )
            return ElicitResult(action="accept")
        fields = list(params.requested_schema["properties"])
        asked.append({"mode": "form", "fields": fields, "message": params.message})
        if "approve" in fields:
            return ElicitResult(action="accept", content={"approve": True})
        return ElicitResult(action="accept", content={"REGION": "north"})

    async with Client(
        streamable_http_client(url, http_client=http), elicitation_callback=on_elicit
    ) as client:
        results = {}
        for tool in ["pay", "locate", "unlock"]:
            result = await client.call_tool(tool, {})
            results[tool] = {"isError": result.is_error, "text": [c.text for c in result.content]}
        print(json.dumps({"protocol": client.protocol_version, "asked": asked, "results": results}))


asyncio.run(main())
