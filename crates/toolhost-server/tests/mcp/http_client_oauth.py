"""The official MCP SDK's Python client against `/mcp`, authorized by OAuth on its own: it
meets the 401 challenge, reads the protected resource metadata it names, discovers the
authorization server, gets an access token by the client credentials grant for the resource,
and then lists and calls.

Usage: http_client_oauth.py URL ISSUER CLIENT_ID CLIENT_SECRET
Prints one JSON object: the tools listed, one call's result and the token endpoint's grants.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client


class Memory:
    """Tokens and client information kept for the run only."""

    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info) -> None:
        self.client = client_info


async def main() -> None:
    url, issuer, client_id, client_secret = sys.argv[1:5]
    storage = Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method="client_secret_basic",
        scope="run",
        issuer=issuer,
    )
    http = httpx2.AsyncClient(auth=auth, timeout=30)
    async with Client(streamable_http_client(url, http_client=http)) as client:
        tools = await client.list_tools()
        good = await client.call_tool("get_weather", {"location": "Tromsø"})
        print(
            json.dumps(
                {
                    "tools": [t.name for t in tools.tools],
                    "good": {"isError": good.is_error, "text": [c.text for c in good.content]},
                    "scope": storage.tokens.scope if storage.tokens else None,
                }
            )
        )


asyncio.run(main())
