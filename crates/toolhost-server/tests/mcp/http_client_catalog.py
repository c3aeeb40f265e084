"""The official MCP SDK's Python client on `/mcp` of `toolhost serve`, using the project's
prompts and resources (the 2025-11-25 protocol; it answers the one elicitation a prompt's tool
asks), then changing the project's files and waiting
to be told.

Usage: http_client_catalog.py URL TOKEN PROJECT
Prints one JSON object: what each request gave (results as JSON, refusals as
{"error": message, "code": code}), the resource update and the prompt list change it was told
of (each within 60 s), and the prompts listed after the change.
"""

import asyncio
import json
import pathlib
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PromptReference


async def outcome(request) -> object:
    try:
        return (await request).model_dump(mode="json", by_alias=True, exclude_none=True)
    except Exception as e:  # noqa: BLE001 - a refusal is what some requests are for
        error = getattr(e, "error", None)
        return {"error": str(e), "code": getattr(error, "code", None)}


async def main() -> None:
    url, token, project = sys.argv[1:4]
    project = pathlib.Path(project)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    updated = asyncio.Event()
    prompts_changed = asyncio.Event()
    told = []

    async def on_message(message) -> None:
        inner = getattr(message, "root", message)
        method = getattr(inner, "method", None)
        if method == "notifications/resources/updated":
            told.append(inner.params.uri)
            updated.set()
        elif method == "notifications/prompts/list_changed":
            prompts_changed.set()

    forms = []

    async def on_elicit(context, params):
        forms.append(params.message)
        return types.ElicitResult(action="accept", content={"context": "a code review"})

    seen = {}
    async with Client(
        streamable_http_client(url, http_client=http),
        message_handler=on_message,
        elicitation_callback=on_elicit,
        mode="legacy",
    ) as client:
        seen["prompts"] = await outcome(client.list_prompts())
        seen["with_args"] = await outcome(
            client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        )
        seen["missing_arg"] = await outcome(
            client.get_prompt("test_prompt_with_arguments", {"arg1": "hello"})
        )
        seen["unknown_arg"] = await outcome(
            client.get_prompt("test_simple_prompt", {"surprise": "x"})
        )
        seen["no_prompt"] = await outcome(client.get_prompt("nothing_of_the_kind"))
        seen["embedded_template"] = await outcome(
            client.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://template/7/data"}
            )
        )
        seen["image"] = await outcome(client.get_prompt("test_prompt_with_image"))
        seen["asking"] = await outcome(client.get_prompt("test_input_required_result_prompt"))
        seen["forms"] = forms
        seen["completed"] = await outcome(
            client.complete(
                PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "PA"},
            )
        )
        seen["resources"] = await outcome(client.list_resources())
        seen["templates"] = await outcome(client.list_resource_templates())
        seen["binary"] = await outcome(client.read_resource("test://static-binary"))
        seen["templated"] = await outcome(client.read_resource("test://template/a%20b/data"))
        seen["unknown"] = await outcome(client.read_resource("test://nothing-here"))
        seen["subscribe_unknown"] = await outcome(client.subscribe_resource("test://nothing-here"))

        await client.subscribe_resource("test://static-binary")
        (project / "agents/mcp-resources/red-pixel.png").write_bytes(b"\x89PNG changed")
        await asyncio.wait_for(updated.wait(), 60)
        seen["told_updated"] = told
        seen["binary_after"] = await outcome(client.read_resource("test://static-binary"))

        (project / "agents/mcp-prompts/added.json").write_text(
            json.dumps({"description": "Added later.", "messages": [{"role": "user", "text": "Hi."}]})
        )
        await asyncio.wait_for(prompts_changed.wait(), 60)
        seen["prompts_after"] = await outcome(client.list_prompts())
    print(json.dumps(seen))


asyncio.run(main())
