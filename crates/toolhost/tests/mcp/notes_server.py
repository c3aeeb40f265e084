"""An MCP server over standard input and output for toolhost's client tests, built on the
official Python SDK (`mcp` from PyPI).

Tools: `add` (read-only, idempotent), `write_note` (appends a line to the file NOTES_FILE
names; destructive), `hang` (never answers until cancelled; writes "cancelled" to NOTES_FILE
when it is), `crash` (the process exits during the call), `slow_count` (reports progress
every 0.3 s) and `picture` (text and an image, no annotations).
When the file NOTES_V2 names exists at start, `add`'s description and schema are different: a
server that changed a tool between two runs.
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ImageContent, TextContent, ToolAnnotations

NOTES_FILE = os.environ.get("NOTES_FILE")
V2 = os.path.exists(os.environ.get("NOTES_V2", "/nonexistent"))

server = MCPServer("notes")


def note(line: str) -> None:
    if NOTES_FILE:
        with open(NOTES_FILE, "a", encoding="utf-8") as f:
            f.write(line + "\n")


if V2:

    @server.tool(
        description="Adds two numbers, optionally rounding.",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True),
    )
    def add(a: int, b: int, round_to: int = 0) -> str:
        return str(a + b)

else:

    @server.tool(
        description="Adds two numbers.",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True),
    )
    def add(a: int, b: int) -> str:
        return str(a + b)


@server.tool(
    description="Appends a note to the notes file.",
    annotations=ToolAnnotations(destructiveHint=True),
)
def write_note(text: str) -> str:
    note(text)
    return f"noted: {text}"


@server.tool(
    description="Waits forever, until the call is cancelled.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
async def hang() -> str:
    try:
        await asyncio.sleep(3600)
    except BaseException:
        note("cancelled")
        raise
    return "woke up"


@server.tool(
    description="Ends the server's process in the middle of the call.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
def crash() -> str:
    note("crashing")
    os._exit(1)


@server.tool(
    description="Counts slowly, reporting progress as it goes.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
async def slow_count(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await asyncio.sleep(0.3)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"


@server.tool(description="Returns a one-pixel picture.")
def picture() -> list:
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    return [TextContent(type="text", text="one pixel"), ImageContent(type="image", data=pixel, mimeType="image/png")]


print("notes server starting", file=sys.stderr, flush=True)
server.run()
