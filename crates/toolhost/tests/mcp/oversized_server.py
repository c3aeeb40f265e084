"""An MCP server over standard input and output that writes answers no client should hold:
plain JSON-RPC lines, no SDK, so that each answer is exactly what the test needs.

Tools: `big` answers with a text of 20 MiB (over the 16 MiB a message may have), `echo` answers
with its `text`. With DEEP=1 in the environment, `tools/list` answers with a tool whose schema
is nested 10,000 levels deep.
"""

import json
import os
import sys

DEEP = os.environ.get("DEEP") == "1"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tools() -> list:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    # Read-only, so that a trusted server's calls run without approval.
    read_only = {"readOnlyHint": True}
    return [
        {"name": "big", "description": "Answers too much.", "inputSchema": {"type": "object"},
         "annotations": read_only},
        {"name": "echo", "description": "Answers its text.", "inputSchema": schema,
         "annotations": read_only},
    ]


for line in sys.stdin:
    request = json.loads(line)
    method, id_ = request.get("method"), request.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oversized", "version": "1"}}})
    elif method == "tools/list" and DEEP:
        # Written by hand: json.dumps itself refuses to nest this deep.
        deep = "[" * 10_000 + "]" * 10_000
        head = json.dumps({"jsonrpc": "2.0", "id": id_})[:-1]
        sys.stdout.write(head + ', "result": {"tools": [{"name": "deep", "inputSchema": '
                         '{"type": "object", "default": ' + deep + '}}]}}\n')
        sys.stdout.flush()
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": tools()}})
    elif method == "tools/call" and request["params"]["name"] == "big":
        # The result first and the id last, as some SDKs write them.
        text = "x" * (20 * 1024 * 1024)
        sys.stdout.write('{"result": {"content": [{"type": "text", "text": "' + text
                         + '"}]}, "jsonrpc": "2.0", "id": ' + json.dumps(id_) + "}\n")
        sys.stdout.flush()
    elif method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": id_,
              "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no such method"}})
