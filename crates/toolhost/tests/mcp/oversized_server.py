"""An MCP server that writes answers no client should hold, in plain JSON-RPC (no SDK), so
that each answer is exactly what the test needs.

Tools: `big` answers with a text of 20 MiB (over the 16 MiB a message may have), `echo` answers
with its `text`. With DEEP=1 in the environment, `tools/list` answers with a tool whose schema
is nested 10,000 levels deep.

With PID_FILE in the environment it writes its process id there at start and does not end at
the end of its input (a stubborn program: only a signal ends it).

Over standard input and output by default. `oversized_server.py http` serves streamable HTTP
on a free port of 127.0.0.1 (printed as `listening PORT`) at any path, answering as JSON, or
with ANSWER=sse as an event stream whose events have ids: a stream resumed with
Last-Event-ID is sent the oversized event again, as a server replaying its events would.
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEEP = os.environ.get("DEEP") == "1"
SSE = os.environ.get("ANSWER") == "sse"


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


def answer(request: dict):
    """The answer to `request` as one line of JSON, or None for a notification."""
    method, id_ = request.get("method"), request.get("id")
    if id_ is None:
        return None
    if method == "initialize":
        return json.dumps({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oversized", "version": "1"}}})
    if method == "tools/list" and DEEP:
        # Written by hand: json.dumps itself refuses to nest this deep.
        deep = "[" * 10_000 + "]" * 10_000
        head = json.dumps({"jsonrpc": "2.0", "id": id_})[:-1]
        return (head + ', "result": {"tools": [{"name": "deep", "inputSchema": '
                '{"type": "object", "default": ' + deep + '}}]}}')
    if method == "tools/list":
        return json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"tools": tools()}})
    if method == "tools/call" and request["params"]["name"] == "big":
        # The result first and the id last, as some SDKs write them.
        text = "x" * (20 * 1024 * 1024)
        return ('{"result": {"content": [{"type": "text", "text": "' + text
                + '"}]}, "jsonrpc": "2.0", "id": ' + json.dumps(id_) + "}")
    if method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        return json.dumps({"jsonrpc": "2.0", "id": id_,
                           "result": {"content": [{"type": "text", "text": text}]}})
    return json.dumps({"jsonrpc": "2.0", "id": id_,
                       "error": {"code": -32601, "message": "no such method"}})


class Http(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The last oversized answer sent on an event stream, replayed on resumption.
    last_big = None

    def log_message(self, *args):
        pass

    def send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def events(self, line: str) -> None:
        self.send(200, b"id: e1\ndata: " + line.encode() + b"\n\n", "text/event-stream")

    def do_GET(self):
        if self.headers.get("last-event-id") and Http.last_big:
            self.events(Http.last_big)
        else:
            self.send(405, b"", "text/plain")

    def do_DELETE(self):
        self.send(200, b"")

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if request.get("method") == "server/discover":
            # A server of 2025-11-25: the client falls back to initialize.
            self.send(200, json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": {
                "code": -32601, "message": "Method not found"}}).encode())
            return
        line = answer(request)
        if line is None:
            self.send(202, b"")
        elif SSE and request.get("method") in ("tools/call", "tools/list"):
            if request.get("method") == "tools/call" and request["params"]["name"] == "big":
                Http.last_big = line
            self.events(line)
        else:
            self.send(200, line.encode())


if len(sys.argv) == 2 and sys.argv[1] == "http":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Http)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
else:
    PID_FILE = os.environ.get("PID_FILE")
    if PID_FILE:
        with open(PID_FILE, "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    for line in sys.stdin:
        line = answer(json.loads(line))
        if line is not None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    while PID_FILE:
        time.sleep(60)
