"""toolhost between two MCP parties in a client scenario of the MCP conformance suite.

Called by the suite as `conformance_proxy_client.py TOOLHOST PROJECT DATA URL` (the suite
appends the URL of the server it started): names that server in the project's
`agents/mcp/conformance.json`, serves the project's agent `a` with `toolhost mcp` over standard
input and output, and as the official Python SDK's client of it calls each tool it lists, once,
with no arguments, answering every form toolhost relays as a person would: an approval with
yes, any other form with each field's default, else a plain value of the field's type. So what
the suite's server asks within a call (its `input_required` answers) travels through toolhost
to this client and back. In `json-schema-2020-12-preservation` it calls only the echo tool,
with the schema toolhost lists for the scenario's focal tool: what survives toolhost's import
and serving is what the suite compares. Writes what it saw to the project's `seen.json` (each call's tool,
isError and text, and each form's message); exits non-zero when a call fails.
"""

import asyncio
import json
import os
import sys

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters

toolhost, project, data, url = sys.argv[1:5]
with open(f"{project}/agents/mcp/conformance.json", "w", encoding="utf-8") as f:
    # Generous: a slow machine may take long to answer the first request.
    json.dump({"url": url, "connectTimeoutMs": 120000}, f)

PLAIN = {"boolean": True, "string": "yes", "integer": 1, "number": 1}
seen = {"calls": [], "forms": []}


async def on_elicit(context, params):
    seen["forms"].append(params.message)
    fields = params.requested_schema.get("properties", {})
    if "approve" in fields:
        return types.ElicitResult(action="accept", content={"approve": True})
    content = {
        name: field.get("default", PLAIN.get(field.get("type"), "yes")) for name, field in fields.items()
    }
    return types.ElicitResult(action="accept", content=content)


async def main() -> None:
    server = StdioServerParameters(command=toolhost, args=["mcp", project, "--agent", "a", "--data", data])
    failed = False
    async with Client(server, elicitation_callback=on_elicit, mode="legacy") as client:
        listed = await client.list_tools()
        calls = [(tool.name, {}) for tool in listed.tools]
        if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "json-schema-2020-12-preservation":
            focal = next(t for t in listed.tools if t.name.endswith(".json_schema_2020_12_tool"))
            echo = next(t for t in listed.tools if t.name.endswith(".json_schema_echo"))
            calls = [(echo.name, {"schema": focal.input_schema})]
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = " ".join(c.text for c in result.content if c.type == "text")
            seen["calls"].append({"tool": name, "isError": bool(result.is_error), "text": text})
            failed |= bool(result.is_error)
    with open(f"{project}/seen.json", "w", encoding="utf-8") as f:
        json.dump(seen, f)
    sys.exit(1 if failed else 0)


asyncio.run(main())
