//! Tools of MCP servers (`agents/mcp/NAME.json`) used by an agent: the real binary, a real MCP
//! server process (the official Python SDK, `tests/mcp/notes_server.py`) and a scripted model.
//! Imported tools are approved as the server's trust allows, pinned per project, timed out,
//! cancelled and restarted, and every result lands in the thread.

mod common;

use common::{
    notes_server, output_of, scripted_agent, test_python, tool_results, toolhost, write, Run,
    TempProject,
};
use serde_json::{json, Value};
use std::process::{Command, Stdio};

/// A project whose agent `a` offers every tool of the server `notes` (trusted or not, with
/// `extra` fields in its file) and runs on a scripted model answering with `script`. The
/// server's start (a Python interpreter loading the MCP SDK) may take long on a slow machine.
fn project(trusted: bool, extra: &str, script: &str) -> TempProject {
    let project = TempProject::new();
    write(
        &project.root,
        "agents/mcp/notes.json",
        &format!(
            r#"{{"command": [{:?}, {:?}], "env": ["NOTES_FILE", "NOTES_V2"], "trusted": {trusted}, "connectTimeoutMs": 120000{extra}}}"#,
            test_python(),
            notes_server()
        ),
    );
    let tools = [
        "notes.add",
        "notes.write_note",
        "notes.hang",
        "notes.crash",
        "notes.slow_count",
        "notes.picture",
        "notes.greet",
        "notes.ship",
    ];
    scripted_agent(&project.root, &tools, script);
    project
}

/// Runs `toolhost` with the notes server's files inside the project.
fn th(project: &TempProject, args: &[&str]) -> Run {
    let out = output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .env("NOTES_FILE", project.root.join("notes.txt"))
            .env("NOTES_V2", project.root.join("v2"))
            .stdin(Stdio::null()),
    );
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn dir(project: &TempProject) -> String {
    project.root.display().to_string()
}

fn data(project: &TempProject) -> String {
    project.root.join("data").display().to_string()
}

/// `toolhost run --json` for agent `a`: the thread's record.
fn run_json(project: &TempProject, message: &str) -> (Run, Value) {
    let run = th(
        project,
        &[
            "run",
            &dir(project),
            "--agent",
            "a",
            "--data",
            &data(project),
            "--json",
            message,
        ],
    );
    let record = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, record)
}

fn resume_json(project: &TempProject, thread: &str, extra: &[&str]) -> (Run, Value) {
    let (dir, data) = (dir(project), data(project));
    let mut args = vec!["resume", &dir, thread, "--data", &data, "--json"];
    args.extend_from_slice(extra);
    let run = th(project, &args);
    let record = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, record)
}

fn send_json(project: &TempProject, thread: &str, message: &str) -> (Run, Value) {
    let run = th(
        project,
        &[
            "send",
            &dir(project),
            thread,
            message,
            "--data",
            &data(project),
            "--json",
        ],
    );
    let record = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, record)
}

fn thread_id(record: &Value) -> String {
    record["thread"]["id"].as_str().unwrap().to_owned()
}

fn pending_approvals(record: &Value) -> Vec<(String, String)> {
    record["pending"]["approvals"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p["call_id"].as_str().unwrap().to_owned(),
                        p["tool"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn notes(project: &TempProject) -> String {
    std::fs::read_to_string(project.root.join("notes.txt")).unwrap_or_default()
}

#[test]
fn an_untrusted_servers_tools_wait_for_approval_and_their_results_reach_the_thread() {
    let project = project(
        false,
        "",
        r#"{"toolCalls": [{"name": "notes.add", "arguments": {"a": 2, "b": 3}}]}
{"toolCalls": [{"name": "notes.picture", "arguments": {}}]}
{"text": "2 + 3 = 5, and here is a picture."}
"#,
    );
    // Even a tool that says it only reads waits: an untrusted server's hints are not believed.
    let (run, record) = run_json(&project, "add 2 and 3");
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let waiting = pending_approvals(&record);
    assert_eq!(waiting.len(), 1, "{record}");
    let thread = thread_id(&record);
    let (run, record) = resume_json(&project, &thread, &["--approve", &waiting[0].0]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let waiting = pending_approvals(&record);
    let (run, record) = resume_json(&project, &thread, &["--approve", &waiting[0].0]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let results = tool_results(&record);
    assert_eq!(
        results,
        [
            ("notes.add".into(), "success".into(), "5".into()),
            ("notes.picture".into(), "success".into(), "one pixel".into()),
        ],
        "{record}"
    );
    // The picture is an image block of the result, as the server sent it.
    let picture = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "notes.picture")
        .unwrap();
    let blocks = &picture["metadata"]["result"]["content"];
    assert_eq!(blocks[1]["type"], "image", "{picture}");
    assert_eq!(blocks[1]["mimeType"], "image/png", "{picture}");
}

#[test]
fn a_trusted_servers_read_only_tool_runs_at_once_and_a_destructive_one_waits() {
    let project = project(
        true,
        "",
        r#"{"toolCalls": [{"name": "notes.add", "arguments": {"a": 40, "b": 2}}, {"name": "notes.write_note", "arguments": {"text": "buy milk"}}]}
{"text": "Noted."}
"#,
    );
    let (run, record) = run_json(&project, "note it");
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        tool_results(&record),
        [("notes.add".into(), "success".into(), "42".into())],
        "the read-only tool ran before the run paused: {record}"
    );
    let waiting = pending_approvals(&record);
    assert_eq!(waiting.len(), 1, "{record}");
    assert!(
        notes(&project).is_empty(),
        "nothing was written before approval"
    );
    let (run, record) = resume_json(&project, &thread_id(&record), &["--approve", &waiting[0].0]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(notes(&project), "buy milk\n");
    assert!(tool_results(&record).contains(&(
        "notes.write_note".into(),
        "success".into(),
        "noted: buy milk".into()
    )));
}

#[test]
fn a_changed_definition_is_refused_in_every_thread_of_the_project_until_a_person_accepts_it() {
    let project = project(
        true,
        "",
        r#"{"toolCalls": [{"name": "notes.add", "arguments": {"a": 1, "b": 1}}]}
{"text": "2."}
{"toolCalls": [{"name": "notes.add", "arguments": {"a": 2, "b": 2}}]}
{"text": "Refused."}
{"toolCalls": [{"name": "notes.add", "arguments": {"a": 3, "b": 3}}]}
{"text": "6."}
"#,
    );
    let (run, record) = run_json(&project, "first");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let thread = thread_id(&record);

    // The server changes the tool (its description and schema) before the next process starts.
    std::fs::write(project.root.join("v2"), "").unwrap();
    let (run, record) = send_json(&project, &thread, "second");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let (tool, status, text) = tool_results(&record).pop().unwrap();
    assert_eq!((tool.as_str(), status.as_str()), ("notes.add", "error"));
    assert!(
        text.contains(
            "changed this tool (description, inputSchema) since the project first used it"
        ) && text.contains("toolhost mcp accept PROJECT notes.add"),
        "{text}"
    );

    // A thread that never used the tool, in a new process, is refused the same: the pin is the
    // project's, not the thread's.
    let (run, fresh) = run_json(&project, "first");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let (_, status, text) = tool_results(&fresh).pop().unwrap();
    assert_eq!(status, "error", "{text}");
    assert!(text.contains("since the project first used it"), "{text}");

    // A person accepts the new definition for the project; calls go through again.
    let accepted = th(
        &project,
        &[
            "mcp",
            "accept",
            &dir(&project),
            "notes.add",
            "--data",
            &data(&project),
        ],
    );
    assert_eq!(accepted.code, 0, "{}\n{}", accepted.stdout, accepted.stderr);
    assert!(
        accepted.stdout.contains("accepted") && accepted.stdout.contains("every thread"),
        "{}",
        accepted.stdout
    );
    let (run, record) = send_json(&project, &thread, "third");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        tool_results(&record).pop().unwrap(),
        ("notes.add".into(), "success".into(), "6".into())
    );
}

#[test]
fn a_call_the_server_never_answers_times_out_is_cancelled_and_the_thread_goes_on() {
    let project = project(
        true,
        r#", "callTimeoutMs": 1500"#,
        r#"{"toolCalls": [{"name": "notes.hang", "arguments": {}}]}
{"text": "The server did not answer."}
"#,
    );
    let (run, record) = run_json(&project, "wait");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let (tool, status, text) = tool_results(&record).pop().unwrap();
    assert_eq!((tool.as_str(), status.as_str()), ("notes.hang", "error"));
    assert!(
        text.contains("did not answer within 1500 ms") && text.contains("asked to cancel"),
        "{text}"
    );
    // The server was told: its handler saw the cancellation.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !notes(&project).contains("cancelled") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(notes(&project).contains("cancelled"), "{}", notes(&project));
    let last = record["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], "The server did not answer.");
}

#[test]
fn progress_from_the_server_keeps_a_long_call_alive_past_the_call_timeout() {
    // 20 steps of 0.3 s: 6 s in all, past the 5 s without an answer; each step well within it.
    let project = project(
        true,
        r#", "callTimeoutMs": 5000"#,
        r#"{"toolCalls": [{"name": "notes.slow_count", "arguments": {"steps": 20}}]}
{"text": "Counted."}
"#,
    );
    let (run, record) = run_json(&project, "count");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        tool_results(&record),
        [(
            "notes.slow_count".into(),
            "success".into(),
            "counted to 20".into()
        )]
    );
}

#[test]
fn a_server_that_exits_during_a_call_reports_an_unknown_outcome_and_is_started_again() {
    let project = project(
        true,
        "",
        r#"{"toolCalls": [{"name": "notes.crash", "arguments": {}}]}
{"toolCalls": [{"name": "notes.add", "arguments": {"a": 5, "b": 5}}]}
{"text": "Recovered."}
"#,
    );
    let (run, record) = run_json(&project, "crash");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let results = tool_results(&record);
    assert_eq!(results.len(), 2, "{record}");
    assert_eq!(results[0].1, "error");
    assert!(
        results[0]
            .2
            .contains("the server exited while the call ran")
            && results[0].2.contains("outcome of the call is unknown"),
        "{}",
        results[0].2
    );
    assert_eq!(
        results[1],
        ("notes.add".into(), "success".into(), "10".into())
    );
    // The crashing call was sent once, never again.
    assert_eq!(notes(&project), "crashing\n");
}

#[test]
fn tools_list_and_mcp_list_show_imported_tools_and_a_broken_server_file_is_named() {
    let project = project(true, "", "{\"text\": \"hi\"}\n");
    let listed = th(&project, &["tools", "list", &dir(&project)]);
    assert_eq!(listed.code, 0, "{}\n{}", listed.stdout, listed.stderr);
    for name in [
        "notes.add",
        "notes.write_note",
        "notes.hang",
        "notes.picture",
    ] {
        assert!(listed.stdout.contains(name), "{}", listed.stdout);
    }
    assert!(
        listed.stdout.contains("mcp (server notes)"),
        "{}",
        listed.stdout
    );
    assert!(listed.stderr.is_empty(), "{}", listed.stderr);

    let servers = th(&project, &["mcp", "list", &dir(&project), "--json"]);
    assert_eq!(servers.code, 0, "{}\n{}", servers.stdout, servers.stderr);
    let servers: Value = serde_json::from_str(&servers.stdout).unwrap();
    let notes_server = &servers["servers"][0];
    assert_eq!(notes_server["state"], "connected");
    let approval = |name: &str| {
        notes_server["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["approval"]
            .clone()
    };
    assert_eq!(approval("notes.add"), false);
    assert_eq!(approval("notes.write_note"), true);
    assert!(notes_server["log"]
        .as_array()
        .unwrap()
        .contains(&"notes server starting".into()));

    // A file with a field this version does not know, and one whose program does not exist.
    write(
        &project.root,
        "agents/mcp/typo.json",
        r#"{"command": ["x"], "comand": ["y"]}"#,
    );
    write(
        &project.root,
        "agents/mcp/gone.json",
        r#"{"command": ["/nonexistent/mcp-server"]}"#,
    );
    let listed = toolhost(&["mcp", "list", &dir(&project)]);
    assert_eq!(listed.code, 2, "{}\n{}", listed.stdout, listed.stderr);
    assert!(
        listed.stderr.contains("typo.json") && listed.stderr.contains("unknown field `comand`"),
        "{}",
        listed.stderr
    );
    assert!(
        listed.stdout.contains("gone (")
            && listed
                .stdout
                .contains("cannot start /nonexistent/mcp-server"),
        "{}",
        listed.stdout
    );
    // The agent still runs: it reaches only the notes server.
    let (run, _) = run_json(&project, "hello");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

#[test]
fn a_tool_whose_property_key_anthropic_refuses_is_lowered_with_the_key_mapped_and_runs() {
    let project = project(
        true,
        "",
        r#"{"toolCalls": [{"name": "notes.greet", "arguments": {"person": {"user name": "Ada"}}}]}
{"text": "Greeted."}
"#,
    );
    // What the Anthropic adapter sends: the name and the key renamed, the $ref inlined.
    let lowered = th(
        &project,
        &[
            "tools",
            "schema",
            &dir(&project),
            "--provider",
            "anthropic",
            "--tool",
            "notes.greet",
        ],
    );
    assert_eq!(lowered.code, 0, "{}\n{}", lowered.stdout, lowered.stderr);
    let declarations: Value = serde_json::from_str(&lowered.stdout).unwrap();
    let declaration = &declarations[0];
    assert_eq!(declaration["name"], "notes_greet");
    let person = &declaration["input_schema"]["properties"]["person"];
    assert!(
        person["properties"].get("user name").is_none(),
        "{declaration}"
    );
    assert!(
        person["properties"].get("user_name").is_some(),
        "{declaration}"
    );
    let schema = declaration["input_schema"].to_string();
    assert!(
        !schema.contains("$ref") && !schema.contains("$defs"),
        "{schema}"
    );
    assert!(
        lowered.stderr.contains(r#"the property key "user name""#),
        "{}",
        lowered.stderr
    );
    // The call itself reaches the server with the server's own key.
    let (run, record) = run_json(&project, "greet");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        tool_results(&record),
        [("notes.greet".into(), "success".into(), "hello Ada".into())]
    );
}

/// A server's schema beyond the spec's subset (`if`/`then`, `not`, `uniqueItems` in a `$defs`
/// entry) is taken: validated locally with all of it (a call breaking `not` and `uniqueItems`
/// never reaches the server), kept whole for Anthropic, and lowered for Gemini and OpenAI's strict mode with
/// what they cannot take reported.
#[test]
fn a_tool_with_a_general_json_schema_is_validated_whole_and_lowered_with_reports() {
    let project = project(
        true,
        "",
        r#"{"toolCalls": [{"name": "notes.ship", "arguments": {"parcel": {"sizes": [2, 2], "cod": true}}}]}
{"toolCalls": [{"name": "notes.ship", "arguments": {"parcel": {"express": true, "phone": "555", "sizes": [1, 2]}}}]}
{"text": "Shipped."}
"#,
    );
    let lowered = |provider: &str| {
        let run = th(
            &project,
            &[
                "tools",
                "schema",
                &dir(&project),
                "--provider",
                provider,
                "--tool",
                "notes.ship",
            ],
        );
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let declarations: Value = serde_json::from_str(&run.stdout).unwrap();
        (declarations[0].clone(), run.stderr)
    };
    let (anthropic, _) = lowered("anthropic");
    let parcel = &anthropic["input_schema"]["properties"]["parcel"];
    assert_eq!(
        parcel["then"],
        json!({"required": ["phone"]}),
        "{anthropic}"
    );
    assert_eq!(parcel["not"], json!({"required": ["cod"]}), "{anthropic}");
    assert_eq!(
        parcel["properties"]["sizes"]["uniqueItems"], true,
        "{anthropic}"
    );
    let (gemini, said) = lowered("gemini");
    assert!(gemini.to_string().find("\"then\"").is_none(), "{gemini}");
    assert!(
        said.contains("then removed") && said.contains("uniqueItems removed"),
        "{said}"
    );
    let (strict, said) = lowered("openai-strict");
    assert_eq!(strict["function"]["strict"], false, "{strict}");
    assert!(
        said.contains("cannot be expressed in strict mode"),
        "{said}"
    );

    let (run, record) = run_json(&project, "ship");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let results = tool_results(&record);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].1, "error", "{results:?}");
    assert!(
        results[0].2.contains("/parcel/sizes") && results[0].2.contains("/parcel"),
        "{results:?}"
    );
    assert_eq!(
        results[1],
        (
            "notes.ship".into(),
            "success".into(),
            "shipped express".into()
        )
    );
    let notes = std::fs::read_to_string(project.root.join("notes.txt")).unwrap();
    assert_eq!(
        notes, "shipped express=True\n",
        "only the valid call reached the server"
    );
}
