//! A `dual_ai` agent runs two sides that take turns: each sees itself as the assistant and the
//! other as the user, never sees the other's tool calls, and the session ends after
//! `maxSessionTurns` turns — also when it is picked up again after a failure.

mod common;

use common::{ListModel, Project};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{
    ChatMessage, ChatRole, FinishReason, ModelApi, ModelError, ModelErrorKind, ModelResponse,
    ModelToolCall, Usage,
};
use toolhost_runtime::engine::{RunOutcome, Runtime, Side, StopReason, ThreadState};
use toolhost_store::{Role, SqliteStore, Store};

/// What the note tools saw: the side, the turn and the note.
type NoteLog = Arc<Mutex<Vec<(Side, u32, String)>>>;

fn new_project(agent: Value) -> Project {
    Project::with_files(&[
            ("agents/agents/interview.json", agent.to_string()),
            // Both sides see the whole session, earlier turns' calls included.
            ("agents/prompts/interviewer.json", r#"{"toolDescription": "Asks.", "prompt": "You interview.", "model": "interviewer_model", "tools": ["take_note", "finish_interview"], "includeChat": true, "includePastTools": true}"#.to_owned()),
            ("agents/prompts/candidate.json", r#"{"toolDescription": "Answers.", "prompt": "You answer.", "model": "candidate_model", "tools": ["take_note"], "includeChat": true, "includePastTools": true}"#.to_owned()),
            // Placeholders: the tests register their own models under these names.
            ("agents/models/interviewer_model.json", r#"{"provider": "test", "script": "none.json"}"#.to_owned()),
            ("agents/models/candidate_model.json", r#"{"provider": "test", "script": "none.json"}"#.to_owned()),
            ("none.json", r#"[{"text": "unused"}]"#.to_owned()),
    ])
}

fn text(t: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        text: Some(t.to_owned()),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        finish: FinishReason::Stop,
        ..ModelResponse::default()
    })
}

fn call(id: &str, name: &str, args: Value) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        text: None,
        tool_calls: vec![ModelToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args.to_string(),
        }],
        usage: Usage::default(),
        finish: FinishReason::ToolCalls,
        ..ModelResponse::default()
    })
}

/// Notes which side called it and in which turn.
fn note_tool(name: &str, log: NoteLog) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Takes a note.")
        .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
        .handler(move |args: Value, ctx| {
            let log = log.clone();
            async move {
                let state = ctx
                    .get::<ThreadState>()
                    .ok_or_else(|| ToolError::new("no thread"))?;
                log.lock().unwrap().push((
                    state.side(),
                    state.turn(),
                    args["text"].as_str().unwrap_or_default().to_owned(),
                ));
                Ok::<_, ToolError>("noted")
            }
        })
        .build()
        .unwrap()
}

async fn runtime(
    project: &Project,
    store: Arc<dyn Store>,
    a: Arc<ListModel>,
    b: Arc<ListModel>,
    log: &NoteLog,
) -> Runtime {
    let mut rt = Runtime::load(&project.root, store).await.unwrap();
    rt.register_tool(note_tool("take_note", log.clone()));
    rt.register_tool(note_tool("finish_interview", log.clone()));
    rt.register_model("interviewer_model", a);
    rt.register_model("candidate_model", b);
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    rt
}

fn roles_and_texts(messages: &[ChatMessage]) -> Vec<(ChatRole, String)> {
    messages
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
            let text = m.content.clone().unwrap_or_else(|| calls.join(","));
            (m.role, text)
        })
        .collect()
}

#[tokio::test]
async fn sides_take_turns_and_see_each_other_as_the_user() {
    let project = new_project(json!({
        "type": "dual_ai",
        "sideA": {"prompt": "interviewer"},
        "sideB": {"prompt": "candidate"},
        "maxSessionTurns": 4
    }));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let a = ListModel::new(vec![
        call("w1", "take_note", json!({"text": "start"})),
        text("What is Rust?"),
        text("Why WAL?"),
    ]);
    let b = ListModel::new(vec![
        call("w1", "take_note", json!({"text": "thinking"})),
        text("A language."),
        text("Fewer fsyncs."),
    ]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&project, store.clone(), a.clone(), b.clone(), &log).await;
    let thread = rt
        .start_thread("interview", "Interview about storage.")
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::MaxSessionTurns(4)));

    // Each side's tool ran on its own turn: a's in turn 1, b's in turn 2.
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (Side::A, 1, "start".to_owned()),
            (Side::B, 2, "thinking".to_owned())
        ]
    );
    // The candidate's first request: its system text, the task, then the interviewer's words as
    // the user; never the interviewer's note call or its result.
    let b_requests = b.requests();
    assert_eq!(
        roles_and_texts(&b_requests[0]),
        vec![
            (ChatRole::System, "You answer.".to_owned()),
            (ChatRole::User, "Interview about storage.".to_owned()),
            (ChatRole::User, "What is Rust?".to_owned()),
        ]
    );
    // The interviewer's last request: its own call and result, its words as the assistant, the
    // candidate's as the user.
    let a_requests = a.requests();
    assert_eq!(a_requests.len(), 3);
    assert_eq!(
        roles_and_texts(&a_requests[2]),
        vec![
            (ChatRole::System, "You interview.".to_owned()),
            (ChatRole::User, "Interview about storage.".to_owned()),
            (ChatRole::Assistant, "take_note".to_owned()),
            (ChatRole::Tool, "noted".to_owned()),
            (ChatRole::Assistant, "What is Rust?".to_owned()),
            (ChatRole::User, "A language.".to_owned()),
        ]
    );
    // Stored replies say their side and turn.
    let replies: Vec<(String, u64)> = store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| {
            (
                m.metadata.side.unwrap().as_str().to_owned(),
                u64::from(m.metadata.turn.unwrap()),
            )
        })
        .collect();
    assert_eq!(
        replies,
        vec![
            ("a".into(), 1),
            ("a".into(), 1),
            ("b".into(), 2),
            ("b".into(), 2),
            ("a".into(), 3),
            ("b".into(), 4),
        ]
    );
}

#[tokio::test]
async fn a_stop_tool_ends_a_turn_and_a_failed_session_continues_where_it_was() {
    let project = new_project(json!({
        "type": "dual_ai",
        "sideA": {"prompt": "interviewer", "stopTool": "finish_interview", "stopOnResponse": false},
        "sideB": {"prompt": "candidate"},
        "maxSessionTurns": 3
    }));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    // Side a keeps its turn after plain text (stopOnResponse false) until it calls its stop tool.
    let a_script = || {
        vec![
            text("Let me think."),
            call("w1", "finish_interview", json!({"text": "q1"})),
            text("Noted, and thanks."),
            call("w2", "finish_interview", json!({"text": "bye"})),
        ]
    };
    let a = ListModel::new(a_script());
    let b_failing = ListModel::new(vec![Err(ModelError::new(
        ModelApi::AnthropicMessages,
        ModelErrorKind::Overloaded,
        "Overloaded (overloaded_error)",
    )
    .with_status(529))]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&project, store.clone(), a.clone(), b_failing.clone(), &log).await;
    let thread = rt.start_thread("interview", "Go.").await.unwrap();
    assert!(rt.run(&thread.id).await.is_err());
    assert_eq!(*log.lock().unwrap(), vec![(Side::A, 1, "q1".to_owned())]);
    drop(rt);

    // Picked up again with a working candidate: the session goes on at b's turn 2, then a's
    // turn 3 (which continues the interviewer's script), and ends there.
    let a2 = ListModel::new(a_script().split_off(2));
    let b = ListModel::new(vec![text("My answer.")]);
    let rt = runtime(&project, store.clone(), a2.clone(), b.clone(), &log).await;
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::MaxSessionTurns(3)));
    assert_eq!(b.requests().len(), 1);
    assert_eq!(a2.requests().len(), 2);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (Side::A, 1, "q1".to_owned()),
            (Side::A, 3, "bye".to_owned())
        ]
    );
    let texts: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .filter_map(|m| m.content.clone())
        .collect();
    assert_eq!(
        texts,
        vec!["Let me think.", "My answer.", "Noted, and thanks."]
    );
}
