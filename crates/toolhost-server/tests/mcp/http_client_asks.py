"""The official MCP SDK's Python client calls tools that ask it things while they run: a form
(elicitation) and a completion (sampling).

Usage: http_client_asks.py URL TOKEN MODE
MODE `answering` (2025-11-25, answering each form with a name and email, and each sampling
request with a fixed text), `silent` (2025-11-25, declaring neither capability) or `modern`
(2026-07-28, answering as `answering` would).
Prints one JSON object: each call's text and isError ("elicit", "sample"), and the requests the
client was sent ("forms": message and requested schema; "samples": the messages).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token, mode = sys.argv[1:4]
    forms, samples = [], []

    async def on_elicit(context, params):
        forms.append({"message": params.message, "schema": params.requested_schema})
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def on_sample(context, params):
        samples.append([m.model_dump(mode="json", exclude_none=True) for m in params.messages])
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="forty-two"),
            model="client-model",
            stop_reason="endTurn",
        )

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    options = {"mode": "auto" if mode == "modern" else "legacy"}
    if mode != "silent":
        options.update(elicitation_callback=on_elicit, sampling_callback=on_sample)
    seen = {}
    async with Client(streamable_http_client(url, http_client=http), **options) as client:
        for key, tool, args in [
            ("elicit", "test_elicitation", {"message": "Who are you?"}),
            ("sample", "test_sampling", {"prompt": "What is six times seven?"}),
        ]:
            result = await client.call_tool(tool, args)
            seen[key] = {
                "isError": bool(result.is_error),
                "text": " ".join(c.text for c in result.content if c.type == "text"),
            }
    seen["forms"] = forms
    seen["samples"] = samples
    print(json.dumps(seen))


asyncio.run(main())
