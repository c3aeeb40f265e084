//! `toolhost mcp` serves an agent's tools to an MCP client over standard input and output: the
//! real binary, driven with the protocol's own JSON-RPC messages (2025-11-25, the version with
//! `initialize`). Only protocol reaches standard output; calls are validated, journaled on
//! threads, and answered as the spec says.

mod common;

use common::{TempProject, PATIENCE};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::Receiver;

fn example() -> String {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../examples/js-tools")
        .display()
        .to_string()
}

struct Client {
    child: Child,
    input: ChildStdin,
    output: Receiver<String>,
    next_id: u64,
}

impl Client {
    /// `toolhost mcp PROJECT --agent AGENT --data DATA`, not yet initialized.
    fn spawn(project: &str, agent: &str, data: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["mcp", project, "--agent", agent, "--data", data])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Never read: a full pipe would stall the server.
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = common::lines_of(child.stdout.take().unwrap());
        Client {
            child,
            input,
            output,
            next_id: 1,
        }
    }

    /// The 2025-11-25 handshake with `capabilities`; returns the answer to `initialize`.
    fn initialize(&mut self, capabilities: Value) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "toolhost-test", "version": "0"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    /// The next line of standard output; fails the test when the server closed it, or wrote
    /// nothing for [`PATIENCE`].
    fn next_line(&mut self) -> String {
        common::next_line(&self.output)
    }

    /// Closes standard input, as a client that leaves does, and waits for the server to end;
    /// fails the test if it is still there after [`PATIENCE`].
    fn leave(self) -> Output {
        drop(self.input);
        common::wait_or_kill(self.child, "toolhost mcp", PATIENCE)
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer (every line must be JSON-RPC).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("standard output holds something that is not JSON ({e}): {line}")
            });
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}

#[test]
fn an_mcp_client_lists_and_calls_the_agents_tools() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let mut client = Client::spawn(&example(), "assistant", &data_dir);
    let init = client.initialize(json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "create_ticket",
            "execute_step",
            "get_weather",
            "search_files",
            "start_workflow"
        ]
    );
    let weather = &tools[2];
    assert_eq!(
        weather["description"],
        "Get the current weather for a location"
    );
    assert_eq!(weather["inputSchema"]["required"], json!(["location"]));
    assert!(listed["result"].get("nextCursor").is_none(), "{listed}");

    let called = client.request(
        "tools/call",
        json!({"name": "get_weather", "arguments": {"location": "Oslo"}}),
    );
    assert_eq!(called["result"]["isError"], false, "{called}");
    let text = called["result"]["content"][0]["text"].as_str().unwrap();
    let weather: Value = serde_json::from_str(text).unwrap();
    assert_eq!(weather["units"], "celsius");

    // Arguments that do not fit: a tool result with isError, naming the problem.
    let wrong = client.request(
        "tools/call",
        json!({"name": "get_weather", "arguments": {"units": "kelvin"}}),
    );
    assert_eq!(wrong["result"]["isError"], true, "{wrong}");
    let said = wrong["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("location"), "{said}");

    // A tool that is not offered is a protocol error.
    let again = client.request(
        "tools/call",
        json!({"name": "get_weather", "arguments": {"location": "Bergen"}}),
    );
    assert_eq!(again["result"]["isError"], false, "{again}");
    let unknown = client.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope"),
        "{unknown}"
    );

    // The client leaves: the server ends cleanly.
    let status = client.leave().status;
    assert!(status.success(), "{status:?}");

    // The session's calls were journaled on one thread, one after the other.
    let threads = common::toolhost(&["threads", "list", "--data", &data_dir, "--json"]);
    assert_eq!(threads.code, 0, "{}", threads.stderr);
    let threads: Value = serde_json::from_str(&threads.stdout).unwrap();
    let threads = threads.as_array().unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(threads[0]["tags"], json!(["scratch"]), "{threads:?}");
    let id = threads[0]["id"].as_str().unwrap();
    let shown = common::toolhost(&["threads", "show", id, "--data", &data_dir, "--json"]);
    let record: Value = serde_json::from_str(&shown.stdout).unwrap();
    let results: Vec<&str> = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 2, "{record}");
    assert!(
        results[0].contains("Oslo") && results[1].contains("Bergen"),
        "{results:?}"
    );
}

/// Writes agent `a` of `p`, whose prompt offers `tools` (a JSON list) and whose scripted model is
/// never asked (calls come from the MCP client).
fn agent_offering(p: &TempProject, tools: &str) {
    common::write(
        &p.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    common::write(
        &p.root,
        "agents/prompts/p.json",
        &format!(
            r#"{{"toolDescription": "x", "prompt": "Work.", "model": "m", "tools": {tools}}}"#
        ),
    );
    common::write(
        &p.root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "m.jsonl"}"#,
    );
    common::write(&p.root, "m.jsonl", "{\"text\": \"unused\"}\n");
}

#[test]
fn a_tool_with_an_output_schema_gives_structured_content_and_annotations_are_listed() {
    let p = TempProject::new();
    p.tool(
        "measure.json",
        r#"{"type": "object", "description": "Measures the depth.",
            "idempotent": true, "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "properties": {"_activity": {"const": "measure"}, "_output": {"type": "object",
                "properties": {"depth": {"type": "number"}}, "required": ["depth"]},
                "spot": {"type": "string"}},
            "required": ["spot"], "additionalProperties": false}"#,
    );
    common::write(
        &p.root,
        "agents/activities/measure.json",
        r#"{"command": ["python3", "measure.py"], "env": ["PATH"], "timeoutMs": 10000}"#,
    );
    common::write(
        &p.root,
        "measure.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': json.dumps({'depth': 12.5})}))\n",
    );
    agent_offering(&p, r#"["measure", "think"]"#);
    let mut client = start_on(&p, json!({}));
    let listed = client.request("tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"][0]["outputSchema"]["required"],
        json!(["depth"]),
        "{listed}"
    );
    // What each definition says of its effects, and nothing it does not say.
    assert_eq!(
        listed["result"]["tools"][0]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false, "idempotentHint": true}),
        "{listed}"
    );
    assert_eq!(
        listed["result"]["tools"][1]["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false, "idempotentHint": true}),
        "{listed}"
    );
    assert!(listed["result"].get("nextCursor").is_none(), "{listed}");
    let bogus = client.request("tools/list", json!({"cursor": "page-7"}));
    assert_eq!(bogus["error"]["code"], -32602, "{bogus}");
    let called = client.request(
        "tools/call",
        json!({"name": "measure", "arguments": {"spot": "pier"}}),
    );
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"depth": 12.5}),
        "{called}"
    );
    assert_eq!(called["result"]["content"][0]["text"], r#"{"depth": 12.5}"#);
    assert!(client.leave().status.success());
}

/// The official MCP SDK's Python client against `toolhost mcp`: it negotiates, lists and calls.
/// `./scripts/test` installs the SDK in a virtual environment and names its Python in
/// `TOOLHOST_TEST_PYTHON`; without it this test fails and says so, it never skips.
#[test]
fn the_official_python_client_lists_and_calls_the_tools() {
    let python = common::test_python();
    let script =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/mcp/python_client.py");
    let data = TempProject::new();
    let out = common::output_of(
        Command::new(python)
            .arg(script)
            .args([
                env!("CARGO_BIN_EXE_toolhost"),
                &example(),
                "assistant",
                &data.root.join("data").display().to_string(),
            ])
            .stdin(Stdio::null()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"get_weather"), "{seen}");
    assert_eq!(seen["good"]["isError"], false, "{seen}");
    let weather: Value = serde_json::from_str(seen["good"]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(weather["units"], "fahrenheit");
    assert_eq!(seen["bad"]["isError"], true, "{seen}");
    assert!(
        seen["bad"]["text"][0]
            .as_str()
            .unwrap()
            .contains("location"),
        "{seen}"
    );
}

impl Client {
    /// Sends a request and reads lines until its answer, answering each request the server
    /// sends meanwhile with `answer` (its result); returns the answer, the server's requests and
    /// its notifications, in the order they came.
    fn exchange(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&Value) -> Value,
    ) -> (Value, Vec<Value>, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let (mut asked, mut notes) = (Vec::new(), Vec::new());
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return (message, asked, notes);
            }
            match (message.get("method"), message.get("id")) {
                (Some(_), Some(_)) => {
                    let result = answer(&message);
                    self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}));
                    asked.push(message);
                }
                (Some(_), None) => notes.push(message),
                _ => {}
            }
        }
    }

    /// [`Client::exchange`] keeping the server's requests.
    fn request_answering(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&Value) -> Value,
    ) -> (Value, Vec<Value>) {
        let (answer, asked, _) = self.exchange(method, params, answer);
        (answer, asked)
    }

    /// [`Client::exchange`] keeping the notifications (a server request fails the test).
    fn request_with_notifications(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let (answer, _, notes) = self.exchange(method, params, |asked| {
            panic!("the server asked something unexpected: {asked}")
        });
        (answer, notes)
    }
}

/// A project whose agent `a` offers `pay`, which needs approval.
fn paying_project() -> TempProject {
    let p = TempProject::new();
    p.tool(
        "pay.json",
        r#"{"type": "object", "description": "Pays an amount.",
            "properties": {"_activity": {"const": "pay"}, "amount": {"type": "integer"}},
            "required": ["amount"], "additionalProperties": false}"#,
    );
    common::write(
        &p.root,
        "agents/activities/pay.json",
        r#"{"command": ["python3", "pay.py"], "env": ["PATH"], "timeoutMs": 10000, "approval": {"reason": "Moves money."}}"#,
    );
    common::write(
        &p.root,
        "pay.py",
        "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'paid %s' % call['arguments']['amount']}))\n",
    );
    agent_offering(&p, r#"["pay"]"#);
    p
}

/// `toolhost mcp` on `project` as agent `a`, not yet initialized.
fn spawn_on(project: &TempProject) -> Client {
    Client::spawn(
        &project.root.display().to_string(),
        "a",
        &project.root.join("data").display().to_string(),
    )
}

/// `toolhost mcp` on `project` as agent `a`, initialized with `capabilities`.
fn start_on(project: &TempProject, capabilities: Value) -> Client {
    let mut client = spawn_on(project);
    client.initialize(capabilities);
    client
}

#[test]
fn a_call_that_needs_approval_is_put_to_a_client_that_can_elicit() {
    let p = paying_project();
    let mut client = start_on(&p, json!({"elicitation": {}}));
    let (paid, asked) = client.request_answering(
        "tools/call",
        json!({"name": "pay", "arguments": {"amount": 5}}),
        |_| json!({"action": "accept", "content": {"approve": true}}),
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    let message = asked[0]["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("pay") && message.contains("Moves money."),
        "{message}"
    );
    assert_eq!(paid["result"]["isError"], false, "{paid}");
    assert_eq!(paid["result"]["content"][0]["text"], "paid 5");

    let (denied, _) = client.request_answering(
        "tools/call",
        json!({"name": "pay", "arguments": {"amount": 500}}),
        |_| json!({"action": "accept", "content": {"approve": false, "message": "not today"}}),
    );
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(denied["result"]["content"][0]["text"], "not today");
    assert!(client.leave().status.success());

    // A client that cannot elicit is told what the call waits for and how to answer it.
    let mut plain = start_on(&p, json!({}));
    let waiting = plain.request(
        "tools/call",
        json!({"name": "pay", "arguments": {"amount": 7}}),
    );
    assert_eq!(waiting["result"]["isError"], true, "{waiting}");
    let said = waiting["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("approval") && said.contains("toolhost resume"),
        "{said}"
    );
    assert!(plain.leave().status.success());
}

/// A project whose tool `locate` needs the text variable REGION and `unlock` the secret
/// DOOR_CODE; both echo what they were given.
fn project_with_variables() -> TempProject {
    let p = TempProject::new();
    for (tool, variable, kind) in [
        ("locate", "REGION", "text"),
        ("unlock", "DOOR_CODE", "secret"),
    ] {
        p.tool(
            &format!("{tool}.json"),
            &format!(
                r#"{{"type": "object", "description": "Uses {variable}.",
                    "properties": {{"_activity": {{"const": "echo_vars"}}}},
                    "variables": [{{"name": "{variable}", "type": "{kind}", "required": true, "description": "What {tool} needs"}}]}}"#
            ),
        );
    }
    common::write(
        &p.root,
        "agents/activities/echo_vars.json",
        r#"{"command": ["python3", "echo_vars.py"], "env": ["PATH"], "timeoutMs": 10000}"#,
    );
    common::write(
        &p.root,
        "echo_vars.py",
        "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'got ' + ','.join(sorted(call['variables']))}))\n",
    );
    agent_offering(&p, r#"["locate", "unlock"]"#);
    p
}

#[test]
fn a_text_variable_is_asked_of_a_client_that_can_elicit_and_a_secret_never_is() {
    let p = project_with_variables();
    let mut client = start_on(&p, json!({"elicitation": {}}));
    let (located, asked) = client.request_answering(
        "tools/call",
        json!({"name": "locate", "arguments": {}}),
        |_| json!({"action": "accept", "content": {"REGION": "north"}}),
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    let form = &asked[0]["params"];
    assert_eq!(
        form["requestedSchema"]["required"],
        json!(["REGION"]),
        "{form}"
    );
    assert_eq!(
        form["requestedSchema"]["properties"]["REGION"]["description"],
        "What locate needs"
    );
    assert_eq!(located["result"]["isError"], false, "{located}");
    assert_eq!(located["result"]["content"][0]["text"], "got REGION");

    // The secret is not put in a form: the call says where to give it instead.
    let (unlocked, asked) = client.request_answering(
        "tools/call",
        json!({"name": "unlock", "arguments": {}}),
        |_| json!({"action": "accept", "content": {"DOOR_CODE": "1234"}}),
    );
    assert!(
        asked.is_empty(),
        "a secret was asked through the client: {asked:?}"
    );
    assert_eq!(unlocked["result"]["isError"], true, "{unlocked}");
    let said = unlocked["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("DOOR_CODE is a secret")
            && said.contains("never asked through an MCP client")
            && said.contains("--secret NAME"),
        "{said}"
    );

    // A user who declines leaves the call waiting, told where to give the value.
    let (declined, _) = client.request_answering(
        "tools/call",
        json!({"name": "locate", "arguments": {}}),
        |_| json!({"action": "decline"}),
    );
    // `unlock` was left waiting on the session's thread, so this call starts another thread,
    // where REGION was never given.
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(declined["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("waits for values of REGION"));
    assert!(client.leave().status.success());
}

#[test]
fn what_a_tool_says_of_its_progress_reaches_a_client_that_gave_a_progress_token() {
    let p = TempProject::new();
    p.tool(
        "count.json",
        r#"{"type": "object", "description": "Counts to three.",
            "properties": {"_activity": {"const": "count"}}}"#,
    );
    common::write(
        &p.root,
        "agents/activities/count.json",
        r#"{"command": ["python3", "count.py"], "env": ["PATH"], "timeoutMs": 10000}"#,
    );
    let helper = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../examples/python/toolhost_state.py");
    std::fs::copy(helper, p.root.join("toolhost_state.py")).unwrap();
    common::write(
        &p.root,
        "count.py",
        "import json, sys\nfrom toolhost_state import ThreadState\njson.load(sys.stdin)\nstate = ThreadState()\nfor i in (1, 2, 3):\n    state.progress(i, 3, 'step %d' % i)\nprint(json.dumps({'status': 'success', 'result': 'counted'}))\n",
    );
    agent_offering(&p, r#"["count"]"#);
    let mut client = start_on(&p, json!({}));
    let (counted, notes) = client.request_with_notifications(
        "tools/call",
        json!({"name": "count", "arguments": {}, "_meta": {"progressToken": "count-1"}}),
    );
    assert_eq!(
        counted["result"]["content"][0]["text"], "counted",
        "{counted}"
    );
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{notes:?}");
    for (i, note) in progress.iter().enumerate() {
        let params = &note["params"];
        assert_eq!(params["progressToken"], "count-1");
        assert_eq!(params["progress"], json!((i + 1) as f64));
        assert_eq!(params["total"], json!(3.0));
        assert_eq!(params["message"], format!("step {}", i + 1));
    }

    // Without a token, nothing but the answer.
    let (counted, notes) =
        client.request_with_notifications("tools/call", json!({"name": "count", "arguments": {}}));
    assert_eq!(counted["result"]["content"][0]["text"], "counted");
    assert!(notes.is_empty(), "{notes:?}");
    assert!(client.leave().status.success());
}

/// Progress travels through two MCP hops: the official Python SDK's server reports it to
/// toolhost, which imported the tool, and toolhost serving that tool passes it on to its client.
#[test]
fn progress_of_an_imported_tool_is_passed_on_to_the_client_of_toolhost_mcp() {
    let python = common::test_python();
    let server = common::notes_server();
    let p = TempProject::new();
    common::write(
        &p.root,
        "agents/mcp/notes.json",
        // The server's start (a Python interpreter loading the MCP SDK) may take long on a slow
        // machine.
        &json!({"command": [python, server], "trusted": true, "connectTimeoutMs": 120000})
            .to_string(),
    );
    agent_offering(&p, r#"["notes.slow_count"]"#);
    let mut client = start_on(&p, json!({}));
    let listed = client.request("tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"][0]["annotations"]["readOnlyHint"], true,
        "the imported tool's annotations are served again: {listed}"
    );
    let (counted, notes) = client.request_with_notifications(
        "tools/call",
        json!({"name": "notes.slow_count", "arguments": {"steps": 3}, "_meta": {"progressToken": 7}}),
    );
    assert_eq!(
        counted["result"]["content"][0]["text"], "counted to 3",
        "{counted}"
    );
    let messages: Vec<&str> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == 7)
        .map(|n| n["params"]["message"].as_str().unwrap_or_default())
        .collect();
    // Steps are 0.3 s apart, so the first two always arrive while the call runs; the last one
    // races the server's answer on the first hop (progress is best effort in MCP), and when it
    // is passed on, it is passed on in order.
    assert!(
        messages == ["step 1", "step 2"] || messages == ["step 1", "step 2", "step 3"],
        "{notes:?}"
    );
    assert!(client.leave().status.success());
}

impl Client {
    /// Reads lines until a notification with `method` arrives.
    fn wait_for_notification(&mut self, method: &str) -> Value {
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == method {
                return message;
            }
        }
    }
}

/// A tool file added (and offered) while `toolhost mcp` serves the project is loaded, the
/// client is told with `notifications/tools/list_changed`, and the next list has it.
#[test]
fn a_tool_file_added_while_serving_is_announced_and_listed() {
    let p = TempProject::new();
    agent_offering(&p, r#"["think"]"#);
    let mut client = start_on(&p, json!({}));
    let init_tools = client.request("tools/list", json!({}));
    assert_eq!(init_tools["result"]["tools"].as_array().unwrap().len(), 1);

    p.tool(
        "recall.json",
        r#"{"type": "object", "description": "Recalls a fact.",
            "properties": {"topic": {"type": "string"}}, "required": ["topic"]}"#,
    );
    agent_offering(&p, r#"["think", "recall"]"#);
    client.wait_for_notification("notifications/tools/list_changed");
    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["recall", "think"], "{listed}");
    assert!(client.leave().status.success());
}

/// Under 2026-07-28 (no `initialize`), a `subscriptions/listen` stream is acknowledged with what
/// it may follow (the tool and prompt lists, not a resource the project does not serve), then told when a tool file added while serving
/// changes the list, the notification tagged with the stream's id.
#[test]
fn a_listen_stream_of_2026_07_28_is_told_when_the_tool_list_changes() {
    let p = TempProject::new();
    agent_offering(&p, r#"["think"]"#);
    let mut client = spawn_on(&p);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    client.send(json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["docs://not-served"]}}}));
    let ack = client.wait_for_notification("notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true}),
        "{ack}"
    );
    let listed = client.request("tools/list", json!({"_meta": meta}));
    assert_eq!(
        listed["result"]["tools"].as_array().unwrap().len(),
        1,
        "{listed}"
    );

    p.tool(
        "recall.json",
        r#"{"type": "object", "description": "Recalls a fact.",
            "properties": {"topic": {"type": "string"}}, "required": ["topic"]}"#,
    );
    agent_offering(&p, r#"["think", "recall"]"#);
    let changed = client.wait_for_notification("notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{changed}"
    );
    let listed = client.request("tools/list", json!({"_meta": meta}));
    assert_eq!(
        listed["result"]["tools"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    assert!(client.leave().status.success());
}

/// The notes server over streamable HTTP on `port` (the official Python SDK), once it listens.
fn notes_over_http(python: &str, port: u16) -> Child {
    let server = common::notes_server();
    let mut child = Command::new(python)
        .arg(server)
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until_listening(&mut child, port, "the MCP server");
    child
}

/// A server at a URL that restarts forgets toolhost's MCP session: the next call meets a 404,
/// the session is set up again once, and the call goes through.
#[test]
fn an_expired_session_of_a_server_at_a_url_is_set_up_again_and_the_call_goes_on() {
    let python = common::test_python();
    let port = common::free_port();
    let mut server = notes_over_http(&python, port);
    let p = TempProject::new();
    common::write(
        &p.root,
        "agents/mcp/remote.json",
        &format!(
            r#"{{"url": "http://127.0.0.1:{port}/mcp", "trusted": true, "connectTimeoutMs": 120000}}"#
        ),
    );
    agent_offering(&p, r#"["remote.add"]"#);
    let mut client = start_on(&p, json!({}));
    let add = |client: &mut Client, a: i64| {
        client.request(
            "tools/call",
            json!({"name": "remote.add", "arguments": {"a": a, "b": 1}}),
        )
    };
    assert_eq!(add(&mut client, 1)["result"]["content"][0]["text"], "2");

    // The server restarts on the same port: toolhost's session is unknown to it now.
    server.kill().unwrap();
    server.wait().unwrap();
    let mut server = notes_over_http(&python, port);
    let again = add(&mut client, 41);
    assert_eq!(again["result"]["isError"], false, "{again}");
    assert_eq!(again["result"]["content"][0]["text"], "42", "{again}");
    assert!(client.leave().status.success());
    server.kill().unwrap();
    let _ = server.wait();
}

/// A line that is not JSON, or not a JSON-RPC message, is answered with an error that says so
/// (never dropped), and the session goes on.
#[test]
fn a_bad_line_is_answered_with_a_parse_error_and_the_session_goes_on() {
    let p = paying_project();
    let mut client = start_on(&p, json!({}));
    let answer = |client: &mut Client, line: &str| -> Value {
        writeln!(client.input, "{line}").unwrap();
        client.input.flush().unwrap();
        serde_json::from_str(&client.next_line()).unwrap()
    };
    let broken = answer(
        &mut client,
        "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": ",
    );
    assert_eq!(broken["error"]["code"], -32700, "{broken}");
    assert!(broken["id"].is_null(), "{broken}");
    let shapeless = answer(
        &mut client,
        "{\"jsonrpc\": \"2.0\", \"id\": 10, \"method\": 5}",
    );
    assert_eq!(shapeless["error"]["code"], -32600, "{shapeless}");
    assert_eq!(shapeless["id"], 10, "{shapeless}");
    let listed = client.request("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}
