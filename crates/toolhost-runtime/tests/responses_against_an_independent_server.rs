//! The Responses dialect against an implementation of the route that toolhost did not write:
//! `llm-mock-api` from PyPI, on loopback, answering from rules. A thread on an `openai` model
//! makes a tool-call round trip with it, streamed as the runtime always asks: the reasoning and
//! the call of the first answer, the tool's output sent back, the text of the second.
//!
//! `./scripts/test` installs the server into a virtual environment and names it in
//! `TOOLHOST_LLM_MOCK`; without it this test fails and says so, it never skips.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store};

/// The rules the server answers with, in turn: reasoning and a call of `lookup`, then the
/// answer. (The rule matches by model: the server reads any input item it does not know, a
/// reasoning item sent back included, as an empty message from a person, so the second
/// request cannot be matched by its text.)
const RULES: &str = r#"[
  { when: { model: "codex-mini" }, replies: [
      { reply: { reasoning: "A word to look up.", tools: [{ name: "lookup", args: { word: "hei" } }] } },
      { reply: { text: "It means hello." } },
  ] },
]"#;

/// The mock server process; killed when dropped.
struct MockServer {
    child: Child,
    port: u16,
}

impl MockServer {
    fn start(folder: &std::path::Path) -> Self {
        let program = std::env::var("TOOLHOST_LLM_MOCK").unwrap_or_else(|_| {
            panic!(
                "TOOLHOST_LLM_MOCK does not name the llm-mock-api server: run the tests with ./scripts/test, which installs it"
            )
        });
        std::fs::write(folder.join("rules.json5"), RULES).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&program)
            .args(["start", "-H", "127.0.0.1", "-p", &port.to_string()])
            .args(["-r", "rules.json5", "-l", "0", "--log-level", "error"])
            .current_dir(folder)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not be started: {e}"));
        let mut server = Self { child, port };
        let started = Instant::now();
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("llm-mock-api ended ({status}) before it listened on port {port}");
            }
            // A connection that reached itself (the kernel may give the client the port it
            // dials) is not the server.
            if let Ok(stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                if stream.local_addr().ok() != stream.peer_addr().ok() {
                    break;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "llm-mock-api did not listen on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lookup() -> toolhost_core::AnyTool {
    DynamicTool::new("lookup", "Looks a word up.")
        .parameters(json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}))
        .handler(|args: Value, _| async move {
            Ok::<_, ToolError>(format!("{} means hello", args["word"].as_str().unwrap_or("")))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_round_trip_works_against_an_independent_server() {
    let folder = Project::with_files::<&str>(&[]);
    let server = MockServer::start(&folder.root);
    let model = json!({"provider": "openai", "model": "codex-mini",
        "baseUrl": format!("http://127.0.0.1:{}/v1", server.port), "apiKeyEnv": "MOCK_KEY"});
    let project = Project::with_files(&[
        ("agents/agents/a.json", r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned()),
        ("agents/prompts/p.json", r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "mock", "tools": ["lookup"]}"#.to_owned()),
        ("agents/models/mock.json", model.to_string()),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let factory = |config: &toolhost_providers::ModelConfig| {
        toolhost_providers::model_from_config(config, |_| Some("sk-mock".to_owned()))
    };
    let mut rt = Runtime::load_with(&project.root, store.clone(), &factory)
        .await
        .unwrap();
    rt.register_tool(lookup());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "What does hei mean?").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let messages = store.messages(&thread.id).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let call = &messages[1].tool_calls[0];
    assert_eq!(call.name, "lookup");
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        json!({"word": "hei"})
    );
    assert_eq!(
        messages[1].metadata.reasoning.as_deref(),
        Some("A word to look up.")
    );
    assert_eq!(messages[2].content.as_deref(), Some("hei means hello"));
    assert_eq!(messages[3].content.as_deref(), Some("It means hello."));
}
