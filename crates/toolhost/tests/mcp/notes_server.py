"""An MCP server over standard input and output for toolhost's client tests, built on the
official Python SDK (`mcp` from PyPI).

Tools: `add` (read-only, idempotent), `write_note` (appends a line to the file NOTES_FILE
names; destructive), `hang` (never answers until cancelled; writes "cancelled" to NOTES_FILE
when it is), `crash` (the process exits during the call), `slow_count` (reports progress
every 0.3 s), `picture` (text and an image, no annotations) and `whoami` (the first letter of
the bearer token a request over HTTP came with), `greet` (a property key with a space, in a
`$defs` entry) and `ship` (a schema beyond the spec's subset: `if`/`then`, `not`, `uniqueItems`). `notes_server.py http PORT` serves it over
streamable HTTP on 127.0.0.1:PORT at /mcp, refusing a token not in NOTES_TOKENS.
When the file NOTES_V2 names exists at start, `add`'s description and schema are different: a
server that changed a tool between two runs.
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, ConfigDict, Field
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


@server.tool(
    description="Says which bearer token the request came with: its first letter only.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
def whoami(ctx: Context) -> str:
    auth = (ctx.headers or {}).get("authorization", "")
    token = auth.removeprefix("Bearer ")
    return f"token {token[:1] or '-'}"


class Person(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_name: str = Field(alias="user name")


@server.tool(
    description="Greets a person; the schema names its field `user name` (a key Anthropic refuses) inside a $ref.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
def greet(person: Person) -> str:
    return f"hello {person.user_name}"


class Parcel(BaseModel):
    # JSON Schema 2020-12 beyond toolhost's own subset: an express parcel needs a phone number,
    # "cod" is never allowed, and the sizes are all different.
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"express": {"const": True}}, "required": ["express"]},
            "then": {"required": ["phone"]},
            "not": {"required": ["cod"]},
        }
    )
    express: bool = False
    phone: str = ""
    sizes: list[int] = Field(default_factory=list, json_schema_extra={"uniqueItems": True})


@server.tool(
    description="Ships a parcel; its schema uses if/then, not and uniqueItems.",
    annotations=ToolAnnotations(readOnlyHint=True),
)
def ship(parcel: Parcel) -> str:
    note(f"shipped express={parcel.express}")
    return "shipped express" if parcel.express else "shipped"


def serve_http(port: int) -> None:
    """Streamable HTTP on 127.0.0.1:port at /mcp; with NOTES_TOKENS set, only a request whose
    `Authorization: Bearer TOKEN` names one of them (comma-separated) gets through."""
    import uvicorn

    app = server.streamable_http_app()
    tokens = [t for t in os.environ.get("NOTES_TOKENS", "").split(",") if t]

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and tokens:
            headers = dict(scope["headers"])
            auth = headers.get(b"authorization", b"").decode()
            if auth.removeprefix("Bearer ") not in tokens:
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unknown token"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


print("notes server starting", file=sys.stderr, flush=True)
if len(sys.argv) == 3 and sys.argv[1] == "http":
    serve_http(int(sys.argv[2]))
else:
    server.run()
