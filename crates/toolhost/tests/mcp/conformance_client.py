"""toolhost as the client of a client scenario of the MCP conformance suite.

Called by the suite as `conformance_client.py TOOLHOST PROJECT DATA URL` (the suite appends the
URL of the server it started): names that server in the project's `agents/mcp/conformance.json`,
runs the project's agent `a` with `toolhost run`, and approves each call it waits for with
`toolhost resume --approve`, as a person would (the scenario server's tools say nothing of
themselves, so their calls need approval). Exits non-zero when toolhost fails.
"""

import json
import subprocess
import sys

toolhost, project, data, url = sys.argv[1:5]

with open(f"{project}/agents/mcp/conformance.json", "w", encoding="utf-8") as f:
    json.dump({"url": url}, f)


def toolhost_json(*args: str) -> dict:
    done = subprocess.run([toolhost, *args, "--data", data, "--json"], capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode not in (0, 3):
        sys.exit(f"toolhost {args[0]} exited with {done.returncode}: {done.stdout}")
    return json.loads(done.stdout)


record = toolhost_json("run", project, "--agent", "a", "go")
for _ in range(10):
    waiting = record["pending"]["approvals"]
    if not waiting:
        break
    thread = record["thread"]["id"]
    approvals = [arg for call in waiting for arg in ("--approve", call["call_id"])]
    record = toolhost_json("resume", project, thread, *approvals)
print(json.dumps(record["thread"]["status"]))
