//! A prompt tool's definition is checked before a thread runs, and each refusal names the file
//! and the field: a `requiredSchema` outside the schema subset, an `initUserMessageProperty` or
//! `initAttachmentsProperty` its arguments lack, settings for something that is not a prompt,
//! offering a prompt that says `exposeAsTool: false`, an unknown settings field, a name that is
//! both a tool and a prompt, and prompt tools nested deeper than the limit (a prompt offering
//! itself always is). Nothing is stored.

mod common;

use common::{ping_tool, runtime_on, ListModel, Project};
use serde_json::{json, Value};
use toolhost_runtime::engine::RuntimeError;
use toolhost_runtime::project::MAX_SUBPROMPT_DEPTH;

/// A project whose agent `a` runs prompt `lead`; `prompts` are more prompt files by name.
fn project(lead_tools: Value, prompts: &[(&str, Value)]) -> Project {
    let mut files = vec![
        (
            "agents/agents/a.json".to_owned(),
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/prompts/lead.json".to_owned(),
            json!({"toolDescription": "x", "prompt": "Lead.", "model": "list", "tools": lead_tools})
                .to_string(),
        ),
    ];
    for (name, prompt) in prompts {
        files.push((format!("agents/prompts/{name}.json"), prompt.to_string()));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(f, t)| (f.as_str(), t.clone())).collect();
    Project::with_files(&files)
}

fn prompt(tools: Value, extra: Value) -> Value {
    let mut p =
        json!({"toolDescription": "Helps.", "prompt": "Help.", "model": "list", "tools": tools});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    p
}

/// The lines of the refusal to start a thread of `a`; nothing may have been stored.
async fn refusal(project: &Project) -> Vec<String> {
    let (mut rt, store) = runtime_on(project, ListModel::new(vec![])).await;
    rt.register_tool(ping_tool());
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    assert!(store.threads(None).unwrap().is_empty());
    match err {
        RuntimeError::Unsound { problems, .. } => problems.iter().map(|p| p.to_string()).collect(),
        other => panic!("expected Unsound, got {other}"),
    }
}

fn has(lines: &[String], file: &str, words: &[&str]) -> bool {
    lines
        .iter()
        .any(|l| l.contains(file) && words.iter().all(|w| l.contains(w)))
}

#[tokio::test]
async fn an_invalid_required_schema_names_the_prompt_file_and_field() {
    let p = project(
        json!(["helper"]),
        &[(
            "helper",
            prompt(json!([]), json!({"requiredSchema": {"type": "string"}})),
        )],
    );
    let lines = refusal(&p).await;
    assert!(
        has(&lines, "agents/prompts/helper.json", &["`requiredSchema`"]),
        "{lines:?}"
    );
}

#[tokio::test]
async fn an_init_property_the_arguments_lack_names_the_offering_file_and_field() {
    let p = project(
        json!(["ping", {"name": "helper", "initUserMessageProperty": "question",
                        "initAttachmentsProperty": "message"}]),
        &[("helper", prompt(json!([]), json!({})))],
    );
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["`tools[1].initUserMessageProperty`", "\"question\""]
        ),
        "{lines:?}"
    );
    // `message` exists but is a string, not a list of paths.
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["`tools[1].initAttachmentsProperty`", "\"message\""]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn settings_for_a_name_that_is_no_prompt_and_unknown_settings_are_refused() {
    let p = project(json!([{"name": "ping", "includeErrors": true}]), &[]);
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["`tools[0]`", "\"ping\"", "not a prompt"]
        ),
        "{lines:?}"
    );
    let p = project(json!([{"name": "helper", "includeEverything": true}]), &[]);
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["`tools[0]`", "includeEverything"]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_name_that_is_both_a_tool_and_a_prompt_is_refused() {
    let p = project(json!(["ping"]), &[("ping", prompt(json!([]), json!({})))]);
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["\"ping\"", "both a tool and a prompt"]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_prompt_offering_itself_is_a_cycle_deeper_than_the_limit() {
    let p = project(
        json!(["helper"]),
        &[("helper", prompt(json!(["helper"]), json!({})))],
    );
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/helper.json",
            &[
                "helper → helper",
                "without end",
                &MAX_SUBPROMPT_DEPTH.to_string()
            ]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_chain_of_prompt_tools_deeper_than_the_limit_is_refused_and_one_at_it_is_not() {
    // lead → p1 → … → pN: N nested prompt tools.
    let chain = |n: usize| {
        let prompts: Vec<(String, Value)> = (1..=n)
            .map(|i| {
                let tools = if i < n {
                    json!([format!("p{}", i + 1)])
                } else {
                    json!([])
                };
                (format!("p{i}"), prompt(tools, json!({})))
            })
            .collect();
        prompts
    };
    let at_limit = chain(MAX_SUBPROMPT_DEPTH);
    let refs: Vec<(&str, Value)> = at_limit
        .iter()
        .map(|(n, p)| (n.as_str(), p.clone()))
        .collect();
    let p = project(json!(["p1"]), &refs);
    let (rt, _store) = runtime_on(&p, ListModel::new(vec![])).await;
    assert!(rt.check_agent("a").is_ok(), "{:?}", rt.check_agent("a"));

    let too_deep = chain(MAX_SUBPROMPT_DEPTH + 1);
    let refs: Vec<(&str, Value)> = too_deep
        .iter()
        .map(|(n, p)| (n.as_str(), p.clone()))
        .collect();
    let p = project(json!(["p1"]), &refs);
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["deeper than", "lead → p1 → p2"]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn offering_a_prompt_that_says_expose_as_tool_false_is_refused() {
    let p = project(
        json!(["helper"]),
        &[("helper", prompt(json!([]), json!({"exposeAsTool": false})))],
    );
    let lines = refusal(&p).await;
    assert!(
        has(
            &lines,
            "agents/prompts/lead.json",
            &["`tools[0]`", "\"helper\"", "`exposeAsTool: false`"]
        ),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_prompt_tool_whose_file_did_not_load_is_named_with_why() {
    let p = project(
        json!(["helper"]),
        &[("helper", prompt(json!([]), json!({"bogus": 1})))],
    );
    let lines = refusal(&p).await;
    assert!(
        has(&lines, "agents/prompts/helper.json", &["bogus"]),
        "{lines:?}"
    );
}

#[tokio::test]
async fn an_agent_tools_argument_settings_are_checked_against_the_agents_arguments() {
    // The offered agent takes a required `topic`: its first side's prompt says so.
    let asker = prompt(
        json!([]),
        json!({"requiredSchema": {"type": "object", "properties": {"topic": {"type": "string"}},
            "required": ["topic"]}}),
    );
    let files = [
        (
            "agents/agents/a.json",
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/agents/researcher.json",
            json!({"type": "dual_ai", "description": "Researches.",
                "sideA": {"prompt": "asker"}, "sideB": {"prompt": "asker"}})
            .to_string(),
        ),
        ("agents/prompts/asker.json", asker.to_string()),
        (
            "agents/prompts/lead.json",
            json!({"toolDescription": "x", "prompt": "Lead.", "model": "list", "tools": [
                {"name": "researcher", "immediate": {}, "initUserMessageProperty": "nope"}
            ]})
            .to_string(),
        ),
    ];
    let project = Project::with_files(&files);
    let lines = refusal(&project).await;
    assert!(
        has(&lines, "lead", &["tools[0].immediate", "takes arguments"]),
        "{lines:?}"
    );
    assert!(
        has(
            &lines,
            "lead",
            &[
                "tools[0].initUserMessageProperty",
                "\"nope\"",
                "not an argument"
            ]
        ),
        "{lines:?}"
    );
}
