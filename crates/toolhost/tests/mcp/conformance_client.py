"""toolhost as the client of a client scenario of the MCP conformance suite.

Called by the suite as `conformance_client.py TOOLHOST PROJECT DATA URL` (the suite appends the
URL of the server it started): names that server in the project's `agents/mcp/conformance.json`,
runs the project's agent `a` with `toolhost run`, and approves each call it waits for with
`toolhost resume --approve`, as a person would (the scenario server's tools say nothing of
themselves, so their calls need approval). Exits non-zero when toolhost fails.

For an `auth/*` scenario the server's file asks for OAuth: the client credentials the suite
gives (`MCP_CONFORMANCE_CONTEXT`: a secret or a private key) as a pre-registered client, else a client ID metadata
document's URL (used where the authorization server takes them, else toolhost registers
itself). For the authorization code grant a person logs in first with `toolhost mcp login`:
this script plays the person's browser, opening the address toolhost prints, which the suite's
authorization server answers at once by redirecting to toolhost's loopback port.
"""

import json
import os
import subprocess
import sys
import urllib.request

toolhost, project, data, url = sys.argv[1:5]
context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO") or context.get("name", "")



def issuer_of(server_url: str) -> str:
    """The authorization server the MCP server names, as a person configuring a registered
    client looks it up (its protected resource metadata)."""
    origin = "/".join(server_url.split("/")[:3])
    path = "/" + "/".join(server_url.split("/")[3:])
    for place in (f"{origin}/.well-known/oauth-protected-resource{path}", f"{origin}/.well-known/oauth-protected-resource"):
        try:
            with urllib.request.urlopen(place, timeout=10) as page:
                return json.load(page)["authorization_servers"][0]
        except Exception:
            continue
    return origin


server = {"url": url}
client_credentials = scenario.startswith("auth/client-credentials")
if scenario.startswith("auth/"):
    oauth = {}
    if "client_id" in context:
        oauth["clientId"] = context["client_id"]
    if "client_secret" in context:
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
    if "private_key_pem" in context:
        os.environ["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
        oauth["privateKey"] = "${CONFORMANCE_PRIVATE_KEY}"
    if "client_secret" in context or "private_key_pem" in context:
        # A registered client's secret or key goes only to the authorization server it pins.
        oauth["issuer"] = issuer_of(url)
    if client_credentials:
        oauth["grant"] = "client_credentials"
    elif scenario != "auth/authorization-server-migration":
        oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
    # (The migration scenario checks that toolhost registers itself again at the new
    # authorization server: a client ID metadata document needs no registration at all.)
    server["oauth"] = oauth
with open(f"{project}/agents/mcp/conformance.json", "w", encoding="utf-8") as f:
    json.dump(server, f)


def login() -> None:
    """`toolhost mcp login`, with this script as the person's browser."""
    child = subprocess.Popen(
        [toolhost, "mcp", "login", project, "conformance", "--data", data, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = child.stdout.readline()
    if not first:
        child.wait()
        sys.exit(f"toolhost mcp login printed no address: {child.stderr.read()}")
    address = json.loads(first)["authorize"]
    # The authorization server answers at once with a redirect to toolhost's loopback port;
    # following it is what a browser does.
    with urllib.request.urlopen(address, timeout=30) as page:
        page.read()
    out, err = child.communicate(timeout=60)
    sys.stderr.write(err)
    if child.returncode != 0:
        sys.exit(f"toolhost mcp login exited with {child.returncode}: {out}")


def login_through_serve() -> None:
    """The same login through `toolhost serve`: its API answers the address to open, and the
    authorization server sends the browser back to the server's own callback page."""
    made = subprocess.run(
        [toolhost, "tokens", "create", "login", "--scope", "admin", "--data", data, "--json"],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        sys.exit(f"toolhost tokens create failed: {made.stderr}")
    token = json.loads(made.stdout)["token"]
    server = subprocess.Popen(
        [toolhost, "serve", project, "--data", data, "--listen", "127.0.0.1:0", "--no-reload"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        first = server.stdout.readline()
        address = first.split("http://")[1].split()[0]
        request = urllib.request.Request(
            f"http://{address}/v1/mcp/servers/conformance/login",
            method="POST",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            started = json.load(answer)
        if started.get("authorized"):
            return
        # The browser: the authorization server answers at once with a redirect to the
        # server's callback page, which ends the login.
        with urllib.request.urlopen(started["authorize_url"], timeout=30) as page:
            said = page.read().decode()
        if "is authorized" not in said:
            sys.exit(f"the callback page said: {said}")
        # The server says so too.
        listing = urllib.request.Request(
            f"http://{address}/v1/mcp/servers",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(listing, timeout=30) as answer:
            servers = {s["name"]: s for s in json.load(answer)["servers"]}
        if not servers["conformance"]["oauth"]["authorized"]:
            sys.exit(f"the server lists no grant after the login: {servers}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def toolhost_json(*args: str) -> tuple[dict, str]:
    """Runs toolhost with `--json`: what it printed as JSON, and all it said (both streams)."""
    done = subprocess.run([toolhost, *args, "--data", data, "--json"], capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    said = done.stdout + done.stderr
    if done.returncode not in (0, 3):
        # A server that needs a person's login keeps the run from starting: the caller logs in.
        if "toolhost mcp login" in said:
            return None, said
        sys.exit(f"toolhost {args[0]} exited with {done.returncode}: {done.stdout}")
    return json.loads(done.stdout), said


def run_agent() -> tuple[dict, str]:
    """Runs the agent, approving its calls; the last record and all toolhost said."""
    record, said = toolhost_json("run", project, "--agent", "a", "go")
    if record is None:
        return None, said
    for _ in range(10):
        waiting = record["pending"]["approvals"]
        if not waiting:
            break
        thread = record["thread"]["id"]
        approvals = [arg for call in waiting for arg in ("--approve", call["call_id"])]
        record, more = toolhost_json("resume", project, thread, *approvals)
        said += more
        if record is None:
            return None, said
    return record, said


# A person logs in before the first run and again when toolhost says a server needs it (more
# scope), three times at most.
logins = 0
needs_person = scenario.startswith("auth/") and not client_credentials
if needs_person:
    if os.environ.get("TOOLHOST_LOGIN_VIA") == "serve":
        login_through_serve()
    else:
        login()
    logins = 1
while True:
    record, said = run_agent()
    if needs_person and "toolhost mcp login" in said and logins < 3:
        login()
        logins += 1
        continue
    break
if record is None:
    sys.exit(f"toolhost could not run: {said}")
print(json.dumps(record["thread"]["status"]))
