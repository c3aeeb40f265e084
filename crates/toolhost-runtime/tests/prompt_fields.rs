//! The spec's prompt fields do what they say: `include` parts put another prompt's text in
//! place, `recentImageThreshold` keeps images on the most recent messages only, and
//! `includeChat` / `includePastTools` choose what of earlier turns the model sees. An unknown
//! part type or field is an error naming the file and the field.

mod common;

use common::{call_answer, runtime_on, text_answer, ListModel, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{ToolContent, ToolResult};
use toolhost_providers::{ChatMessage, ChatRole};
use toolhost_runtime::engine::Runtime;
use toolhost_store::{SqliteStore, Store};

/// A project with agent `a` on prompt `p` (written as `prompt`), plus `more` files.
fn project_with(prompt: Value, more: &[(&str, String)]) -> Project {
    let mut files = vec![
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        ("agents/prompts/p.json", prompt.to_string()),
    ];
    files.extend(more.iter().map(|(f, t)| (*f, t.clone())));
    Project::with_files(&files)
}

/// Each message as (role, text, or the names of its calls).
fn shape(messages: &[ChatMessage]) -> Vec<(ChatRole, String)> {
    messages
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
            (m.role, m.content.clone().unwrap_or_else(|| calls.join(",")))
        })
        .collect()
}

#[tokio::test]
async fn include_parts_put_the_other_prompts_text_and_variables_in_place() {
    let project = project_with(
        json!({"toolDescription": "x", "model": "list", "prompt": [
            {"type": "text", "content": "Start."},
            {"type": "include", "prompt": "house_rules"},
            {"type": "text", "text": "End."}
        ]}),
        &[(
            "agents/prompts/house_rules.json",
            json!({"toolDescription": "rules", "model": "list",
                "prompt": [{"type": "text", "content": "Be kind to team"}, {"type": "env", "name": "TEAM"}],
                "variables": [{"name": "TEAM", "type": "text", "required": true, "description": "Team"}],
                "values": {"TEAM": "blue"}})
            .to_string(),
        )],
    );
    let model = ListModel::new(vec![text_answer("ok")]);
    let (rt, _store) = runtime_on(&project, model.clone()).await;
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "hi").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let system = &model.requests()[0][0];
    assert_eq!(system.role, ChatRole::System);
    assert_eq!(
        system.content.as_deref(),
        Some("Start.\n\nBe kind to team\n\nblue\n\nEnd.")
    );
}

#[tokio::test]
async fn unknown_parts_fields_and_broken_includes_are_errors_naming_the_file() {
    let prompt = |parts: Value| {
        json!({"toolDescription": "x", "model": "list", "prompt": parts}).to_string()
    };
    let project = project_with(
        json!({"toolDescription": "x", "model": "list", "prompt": "Hi."}),
        &[
            ("agents/prompts/image_part.json", prompt(json!([{"type": "text", "content": "a"}, {"type": "image", "url": "x"}]))),
            ("agents/prompts/styled.json", prompt(json!([{"type": "text", "content": "a", "style": "bold"}]))),
            ("agents/prompts/loop_a.json", prompt(json!([{"type": "include", "prompt": "loop_b"}]))),
            ("agents/prompts/loop_b.json", prompt(json!([{"type": "include", "prompt": "loop_a"}]))),
            ("agents/prompts/lost.json", prompt(json!([{"type": "include", "prompt": "nowhere"}]))),
            (
                "agents/prompts/reasoning.json",
                json!({"toolDescription": "x", "model": "list", "prompt": "Hi.", "reasoning": {"effort": "low"}}).to_string(),
            ),
        ],
    );
    let (rt, _store) = runtime_on(&project, ListModel::new(vec![])).await;
    let problems = rt.problems();
    let of = |file: &str| -> String {
        problems
            .iter()
            .filter(|p| p.path.ends_with(format!("agents/prompts/{file}.json")))
            .map(|p| {
                assert!(!p.loaded, "{p}");
                p.message.clone()
            })
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let image = of("image_part");
    assert!(
        image.contains("`prompt` part 1") && image.contains("unknown variant `image`"),
        "{image}"
    );
    let styled = of("styled");
    assert!(
        styled.contains("`prompt` part 0") && styled.contains("unknown field `style`"),
        "{styled}"
    );
    assert!(of("loop_a").contains("cycle"), "{}", of("loop_a"));
    assert!(of("loop_b").contains("cycle"), "{}", of("loop_b"));
    assert!(of("lost").contains("\"nowhere\""), "{}", of("lost"));
    assert!(
        of("reasoning").contains("unknown field `reasoning`"),
        "{}",
        of("reasoning")
    );
    assert_eq!(problems.len(), 6, "{problems:?}");
}

#[tokio::test]
async fn include_past_tools_without_include_chat_is_refused() {
    let project = project_with(
        json!({"toolDescription": "x", "model": "list", "prompt": "Hi.", "includePastTools": true}),
        &[],
    );
    let (rt, _store) = runtime_on(&project, ListModel::new(vec![])).await;
    let problems = rt.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.path.ends_with("agents/prompts/p.json")
                && p.message
                    .contains("`includePastTools: true` needs `includeChat: true`")),
        "{problems:?}"
    );
}

/// A tool whose result shows one PNG image.
fn snap_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("snap", "Takes a picture.")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(|_: Value, _| async move {
            let mut result = ToolResult::success("a picture");
            result.content = Some(vec![ToolContent::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            }]);
            Ok::<_, ToolError>(result)
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn recent_image_threshold_keeps_images_on_the_most_recent_messages_only() {
    let project = project_with(
        json!({"toolDescription": "x", "model": "list", "prompt": "Look.", "tools": ["snap", "ping"], "recentImageThreshold": 2}),
        &[],
    );
    let model = ListModel::new(vec![
        call_answer("c1", "snap", "{}"),
        call_answer("c2", "ping", "{}"),
        text_answer("seen"),
    ]);
    let (mut rt, _store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(snap_tool());
    rt.register_tool(common::ping_tool());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "take one").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let requests = model.requests();
    // Right after the result: it is one of the 2 most recent messages and carries its image.
    let result = requests[1]
        .iter()
        .find(|m| m.tool_call_id.is_some())
        .unwrap();
    assert_eq!(result.images.len(), 1);
    // Two messages later it is not: a line names the image instead.
    let result = requests[2]
        .iter()
        .find(|m| m.tool_call_id.is_some())
        .unwrap();
    assert!(result.images.is_empty());
    let text = result.content.as_deref().unwrap();
    assert!(
        text.contains(
            "[image image 1 not shown: images are sent with the 2 most recent messages only]"
        ),
        "{text}"
    );
}

/// Runs two turns of agent `a` (a call of `ping` and a reply, then a reply) on a prompt with
/// `settings`, and returns the requests the model was sent.
async fn two_turns(settings: Value) -> Vec<Vec<ChatMessage>> {
    let mut prompt =
        json!({"toolDescription": "x", "model": "list", "prompt": "Sys.", "tools": ["ping"]});
    for (k, v) in settings.as_object().unwrap() {
        prompt[k] = v.clone();
    }
    let project = project_with(prompt, &[]);
    let model = ListModel::new(vec![
        call_answer("c1", "ping", "{}"),
        text_answer("first answer"),
        text_answer("second answer"),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store).await.unwrap();
    rt.register_model("list", model.clone());
    rt.register_tool(common::ping_tool());
    let thread = rt.start_thread("a", "q1").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    rt.send(&thread.id, "q2").await.unwrap();
    model.requests()
}

#[tokio::test]
async fn by_default_the_model_sees_the_current_turn_only() {
    let requests = two_turns(json!({})).await;
    // Within the turn, its call and result are shown.
    assert_eq!(
        shape(&requests[1]),
        [
            (ChatRole::System, "Sys.".to_owned()),
            (ChatRole::User, "q1".to_owned()),
            (ChatRole::Assistant, "ping".to_owned()),
            (ChatRole::Tool, "pong".to_owned()),
        ]
    );
    assert_eq!(
        shape(&requests[2]),
        [
            (ChatRole::System, "Sys.".to_owned()),
            (ChatRole::User, "q2".to_owned())
        ]
    );
}

#[tokio::test]
async fn include_chat_shows_earlier_turns_without_their_tool_calls() {
    let requests = two_turns(json!({"includeChat": true})).await;
    assert_eq!(
        shape(&requests[2]),
        [
            (ChatRole::System, "Sys.".to_owned()),
            (ChatRole::User, "q1".to_owned()),
            (ChatRole::Assistant, "first answer".to_owned()),
            (ChatRole::User, "q2".to_owned()),
        ]
    );
}

#[tokio::test]
async fn include_past_tools_adds_the_earlier_calls_and_results() {
    let requests = two_turns(json!({"includeChat": true, "includePastTools": true})).await;
    assert_eq!(
        shape(&requests[2]),
        [
            (ChatRole::System, "Sys.".to_owned()),
            (ChatRole::User, "q1".to_owned()),
            (ChatRole::Assistant, "ping".to_owned()),
            (ChatRole::Tool, "pong".to_owned()),
            (ChatRole::Assistant, "first answer".to_owned()),
            (ChatRole::User, "q2".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_dual_ai_side_sees_only_what_it_answers_unless_its_prompt_includes_the_chat() {
    let side = |model: &str, chat: bool| {
        json!({"toolDescription": "x", "model": model, "prompt": format!("I am {model}."), "includeChat": chat})
            .to_string()
    };
    let project = Project::with_files(&[
        (
            "agents/agents/d.json",
            r#"{"type": "dual_ai", "sideA": {"prompt": "pa"}, "sideB": {"prompt": "pb"}, "maxSessionTurns": 4}"#.to_owned(),
        ),
        ("agents/prompts/pa.json", side("ma", false)),
        ("agents/prompts/pb.json", side("mb", true)),
    ]);
    let a = ListModel::new(vec![text_answer("A1"), text_answer("A2")]);
    let b = ListModel::new(vec![text_answer("B1"), text_answer("B2")]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store).await.unwrap();
    rt.register_model("ma", a.clone());
    rt.register_model("mb", b.clone());
    let thread = rt.start_thread("d", "Talk.").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    // Side a's second turn: the session's task and what b said since a's first turn.
    assert_eq!(
        shape(&a.requests()[1]),
        [
            (ChatRole::System, "I am ma.".to_owned()),
            (ChatRole::User, "Talk.".to_owned()),
            (ChatRole::User, "B1".to_owned())
        ]
    );
    // Side b includes the chat: the whole session, as b sees it.
    assert_eq!(
        shape(&b.requests()[1]),
        [
            (ChatRole::System, "I am mb.".to_owned()),
            (ChatRole::User, "Talk.".to_owned()),
            (ChatRole::User, "A1".to_owned()),
            (ChatRole::Assistant, "B1".to_owned()),
            (ChatRole::User, "A2".to_owned()),
        ]
    );
}
