//! A thread runs only when every definition its agent reaches is sound: a prompt that offers a
//! tool that does not exist, an agent whose prompt did not load, a blueprint whose `_activity`
//! names no activity, a side rule naming a tool its prompt does not offer. Each is refused
//! before anything is stored, naming the file and the missing name; the run never goes on
//! without the missing part. Files that loaded but refer to a missing name say so, and are not
//! called "not loaded".

mod common;

use common::{one_prompt_project, runtime_on, text_answer, ListModel, Project};
use serde_json::json;
use std::sync::Arc;
use toolhost_runtime::engine::{Runtime, RuntimeError};
use toolhost_store::{SqliteStore, Store};

/// The problems an `Unsound` error lists, as "path: message" lines.
fn unsound_lines(err: &RuntimeError) -> Vec<String> {
    match err {
        RuntimeError::Unsound { problems, .. } => problems.iter().map(|p| p.to_string()).collect(),
        other => panic!("expected Unsound, got {other}"),
    }
}

#[tokio::test]
async fn a_prompt_offering_a_missing_tool_is_refused_and_nothing_is_stored() {
    let project = one_prompt_project(&["ping", "no_such_tool"]);
    let model = ListModel::new(vec![text_answer("never asked")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(common::ping_tool());
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    let lines = unsound_lines(&err);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("agents/prompts/p.json") && lines[0].contains("\"no_such_tool\""),
        "{lines:?}"
    );
    assert!(err.to_string().contains("no_such_tool"), "{err}");
    assert!(store.threads(None).unwrap().is_empty());
    assert!(model.requests().is_empty());
    // The problem is listed as a reference, not as a file that did not load.
    let problem = rt
        .problems()
        .into_iter()
        .find(|p| p.message.contains("no_such_tool"))
        .unwrap();
    assert!(problem.loaded);
}

#[tokio::test]
async fn an_agent_whose_prompt_did_not_load_is_refused_naming_the_prompt_file() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        // `prompts` is not a field of a prompt: the file does not load.
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Hi.", "model": "list", "prompts": []}"#,
        ),
    ]);
    let (rt, store) = runtime_on(&project, ListModel::new(vec![])).await;
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    let lines = unsound_lines(&err);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("agents/prompts/p.json") && lines[0].contains("unknown field `prompts`"),
        "{lines:?}"
    );
    assert!(store.threads(None).unwrap().is_empty());
    let problem = rt
        .problems()
        .into_iter()
        .find(|p| p.path.ends_with("agents/prompts/p.json"))
        .unwrap();
    assert!(!problem.loaded);
}

#[tokio::test]
async fn a_blueprint_whose_activity_is_missing_does_not_load_and_its_agent_is_refused() {
    let project = one_prompt_project(&["make_ticket"]);
    std::fs::write(
        project.root.join("agents/tools/make_ticket.json"),
        json!({
            "type": "object",
            "description": "Files a ticket.",
            "properties": {
                "_activity": {"type": "string", "const": "ticket_desk"},
                "title": {"type": "string"}
            }
        })
        .to_string(),
    )
    .unwrap();
    let (rt, store) = runtime_on(&project, ListModel::new(vec![])).await;
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    let lines = unsound_lines(&err);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("agents/tools/make_ticket.json")
            && lines[0].contains("/properties/_activity")
            && lines[0].contains("\"ticket_desk\""),
        "{lines:?}"
    );
    assert!(store.threads(None).unwrap().is_empty());
}

#[tokio::test]
async fn a_side_rule_naming_a_tool_its_prompt_does_not_offer_is_refused() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p", "stopTool": "done", "sessionStop": {"name": "ping", "messageProperty": "summary"}}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Hi.", "model": "list", "tools": ["ping"]}"#,
        ),
    ]);
    let (mut rt, store) = runtime_on(&project, ListModel::new(vec![])).await;
    rt.register_tool(common::ping_tool());
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    let lines = unsound_lines(&err);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().all(|l| l.contains("agents/agents/a.json")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("sideA.stopTool") && l.contains("\"done\"")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("sideA.sessionStop.messageProperty") && l.contains("\"summary\"")),
        "{lines:?}"
    );
    assert!(store.threads(None).unwrap().is_empty());
}

#[tokio::test]
async fn a_stored_thread_whose_agent_became_unsound_is_not_run_or_sent_to() {
    let project = one_prompt_project(&["ping"]);
    let model = ListModel::new(vec![text_answer("hello")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(common::ping_tool());
    let thread = rt.start_thread("a", "hi").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let before = store.messages(&thread.id).unwrap().len();

    // The same project loaded again, without the tool its prompt offers.
    let again: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, again).await.unwrap();
    rt.register_model("list", model.clone());
    let err = rt.send(&thread.id, "again").await.unwrap_err();
    assert!(unsound_lines(&err)[0].contains("\"ping\""), "{err}");
    let err = rt.run(&thread.id).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Unsound { .. }), "{err}");
    assert_eq!(store.messages(&thread.id).unwrap().len(), before);
    assert!(store.queued(&thread.id).unwrap().is_empty());
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_name_other_than_the_files_is_refused_and_an_agent_without_type_is_ai_human() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"name": "a", "title": "Helper", "description": "Helps.", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/agents/renamed.json",
            r#"{"name": "other", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"name": "p", "toolDescription": "x", "prompt": "Hi.", "model": "list"}"#,
        ),
        (
            "agents/prompts/q.json",
            r#"{"name": "p", "toolDescription": "x", "prompt": "Hi.", "model": "list"}"#,
        ),
    ]);
    let model = ListModel::new(vec![text_answer("hello")]);
    let (rt, _store) = runtime_on(&project, model.clone()).await;
    let problems: Vec<String> = rt.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("agents/agents/renamed.json")
                && p.contains("`name` is \"other\" but the file is named renamed.json")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("agents/prompts/q.json") && p.contains("`name` is \"p\"")),
        "{problems:?}"
    );
    let thread = rt.start_thread("a", "hi").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(model.requests().len(), 1);
}
