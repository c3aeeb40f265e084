"""A 2026-07-28 MCP server over HTTP, written by hand (stateless: `server/discover`, then
requests that each carry their `_meta`), whose one tool asks before it answers, as the
protocol's `input_required` result asks, and only a client that declared it can answer
(`elicitation` among the request's client capabilities); otherwise it refuses the call with
error -32021, as the protocol says.

Usage: asking_server.py LOG. Prints the port it listens on (loopback), then serves until killed;
appends the client capabilities of each `tools/call` to LOG, one JSON line each.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

LOG = sys.argv[1]
VERSION = "2026-07-28"
FORM = {
    "message": "Delete report.txt?",
    "requestedSchema": {"type": "object", "properties": {"sure": {"type": "boolean"}}, "required": ["sure"]},
}


def result(request_id, body):
    return {"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", **body}}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, params, request_id = request.get("method"), request.get("params") or {}, request.get("id")
        if request_id is None:
            self.send_response(202)
            self.end_headers()
            return
        if method == "server/discover":
            return self.answer(200, result(request_id, {
                "ttlMs": 0,
                "cacheScope": "private",
                "supportedVersions": [VERSION],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "asking", "version": "1.0.0"},
            }))
        if method == "tools/list":
            return self.answer(200, result(request_id, {"ttlMs": 0, "cacheScope": "private", "tools": [{
                "name": "delete_report",
                "description": "Deletes the report once the user is sure.",
                "inputSchema": {"type": "object", "properties": {}},
            }]}))
        if method == "tools/call":
            capabilities = (params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
            with open(LOG, "a", encoding="utf-8") as log:
                log.write(json.dumps(capabilities) + "\n")
            if "elicitation" not in capabilities:
                return self.answer(400, {"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": -32021, "message": "Missing required client capability",
                    "data": {"requiredCapabilities": {"elicitation": {}}}}})
            answers = params.get("inputResponses") or {}
            if "sure" not in answers:
                return self.answer(200, {"jsonrpc": "2.0", "id": request_id, "result": {
                    "resultType": "input_required",
                    "inputRequests": {"sure": {"method": "elicitation/create", "params": FORM}},
                    "requestState": "asked-once",
                }})
            sure = (answers["sure"].get("content") or {}).get("sure")
            state = params.get("requestState")
            text = f"deleted: {sure}, state {state}"
            return self.answer(200, result(request_id, {"content": [{"type": "text", "text": text}]}))
        self.answer(404, {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
