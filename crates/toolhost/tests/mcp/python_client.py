"""An independent MCP client (the official Python SDK) against `toolhost mcp`.

Usage: python_client.py TOOLHOST_BINARY PROJECT AGENT DATA_DIR
Prints one JSON object: the protocol version negotiated, the tools listed, and the results of
a good call and of a call whose arguments do not fit.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    binary, project, agent, data = sys.argv[1:5]
    server = StdioServerParameters(command=binary, args=["mcp", project, "--agent", agent, "--data", data])
    async with Client(server) as client:
        tools = await client.list_tools()
        good = await client.call_tool("get_weather", {"location": "Bergen", "units": "fahrenheit"})
        bad = await client.call_tool("get_weather", {"units": "kelvin"})
        print(
            json.dumps(
                {
                    "tools": [
                        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                        for t in tools.tools
                    ],
                    "good": {"isError": good.is_error, "text": [c.text for c in good.content]},
                    "bad": {"isError": bad.is_error, "text": [c.text for c in bad.content]},
                }
            )
        )


asyncio.run(main())
