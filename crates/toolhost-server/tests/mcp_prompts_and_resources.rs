//! The project's prompts (`agents/mcp-prompts/`) and resources (`agents/mcp-resources/`) at
//! `/mcp`, used by the official MCP SDK's Python client on a copy of the conformance example:
//! arguments put in and refused, completion, an image and an embedded resource, fixed and
//! templated reads (the template's read-only tool journaled like any call), unknown URIs, and
//! the notifications a client gets when the files change while it is connected.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_server::auth::Scope;
use toolhost_store::CallState;

/// A 1×1 PNG, as base64 (the example's `red-pixel.png`).
const PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// The text field `field` of each item of the list `items`.
fn field_of_each<'a>(items: &'a Value, field: &str) -> Vec<&'a str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item[field].as_str())
        .collect()
}

/// The text of the first message of a `prompts/get` result.
fn first_text(result: &Value) -> &str {
    result["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_of_the_project_reach_the_official_client() {
    let root = mcp_example_copy();
    let server = TestServer::start_watching(&root, |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let url = format!("http://{}/mcp", server.addr);
    let root_text = root.to_string_lossy().into_owned();
    let seen = python_client("http_client_catalog.py", &[&url, &token, &root_text]).await;

    let names = field_of_each(&seen["prompts"]["prompts"], "name");
    assert_eq!(
        names,
        [
            "test_changing_prompt",
            "test_input_required_result_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_simple_prompt"
        ]
    );
    let listed = &seen["prompts"]["prompts"][2];
    assert_eq!(listed["arguments"][0]["name"], "arg1", "{listed}");
    assert_eq!(listed["arguments"][0]["required"], true, "{listed}");

    assert_eq!(
        first_text(&seen["with_args"]),
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    let missing = seen["missing_arg"]["error"].as_str().unwrap_or_default();
    assert!(missing.contains("needs argument \"arg2\""), "{seen}");
    let unknown = seen["unknown_arg"]["error"].as_str().unwrap_or_default();
    assert!(unknown.contains("takes no argument \"surprise\""), "{seen}");
    let none = seen["no_prompt"]["error"].as_str().unwrap_or_default();
    assert!(none.contains("no prompt \"nothing_of_the_kind\""), "{seen}");

    // The embedded resource came from the template, whose tool ran.
    let embedded = &seen["embedded_template"]["messages"][0]["content"];
    assert_eq!(embedded["type"], "resource", "{seen}");
    assert_eq!(embedded["resource"]["uri"], "test://template/7/data");
    let data: Value = serde_json::from_str(embedded["resource"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        data,
        json!({"id": "7", "templateTest": true, "data": "Data for ID: 7"})
    );
    let image = &seen["image"]["messages"][0]["content"];
    assert_eq!(
        (
            image["type"].as_str(),
            image["mimeType"].as_str(),
            image["data"].as_str()
        ),
        (Some("image"), Some("image/png"), Some(PIXEL)),
        "{seen}"
    );

    // A message made by a tool: the tool asked the client's user (a request, under
    // 2025-11-25), and the answer is in the prompt.
    assert_eq!(
        seen["forms"],
        json!(["What context should the prompt use?"]),
        "{seen}"
    );
    assert_eq!(
        first_text(&seen["asking"]),
        "Answer with this context in mind: a code review"
    );

    // Completion offers the declared values that start with what was typed, ignoring case.
    assert_eq!(
        seen["completed"]["completion"]["values"],
        json!(["paris", "park", "party"]),
        "{seen}"
    );
    assert_eq!(seen["completed"]["completion"]["total"], 3);

    let uris = field_of_each(&seen["resources"]["resources"], "uri");
    assert_eq!(
        uris,
        [
            "test://example-resource",
            "test://static-binary",
            "test://static-text",
            "test://watched-resource"
        ]
    );
    assert_eq!(
        seen["templates"]["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data",
        "{seen}"
    );
    let binary = &seen["binary"]["contents"][0];
    assert_eq!(binary["blob"], PIXEL, "{seen}");
    assert_eq!(binary["mimeType"], "image/png");
    let templated = &seen["templated"]["contents"][0];
    assert_eq!(templated["mimeType"], "application/json", "{seen}");
    assert!(
        templated["text"]
            .as_str()
            .unwrap()
            .contains("Data for ID: a b"),
        "the template's value is percent-decoded: {seen}"
    );
    // SEP-2164: an unknown resource is -32002, for reads and subscriptions alike.
    assert_eq!(seen["unknown"]["code"], -32002, "{seen}");
    assert_eq!(seen["subscribe_unknown"]["code"], -32002, "{seen}");

    // The file changed under the subscription: the client was told, and reads the new bytes.
    assert_eq!(seen["told_updated"], json!(["test://static-binary"]));
    assert_eq!(
        seen["binary_after"]["contents"][0]["blob"],
        base64_of(b"\x89PNG changed"),
        "{seen}"
    );
    let after = field_of_each(&seen["prompts_after"]["prompts"], "name");
    assert_eq!(after[0], "added", "{seen}");

    // Each templated read ran the template's tool as a journaled call.
    let mut reads = Vec::new();
    for thread in server.store.threads(None).unwrap() {
        for call in server.store.calls(&thread.id).unwrap() {
            if call.tool == "test_template_data" && call.state == CallState::Completed {
                reads.push(call.arguments);
            }
        }
    }
    assert_eq!(reads.len(), 2, "{reads:?}");
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_whose_tool_is_not_read_only_is_refused_and_runs_nothing() {
    let root = mcp_example_copy();
    // The same tool without `readOnlyHint`.
    let tool = root.join("agents/tools/test_template_data.js");
    let text = std::fs::read_to_string(&tool).unwrap();
    std::fs::write(
        &tool,
        text.replace("annotations: { readOnlyHint: true },", ""),
    )
    .unwrap();
    let server = TestServer::start_with(&root, |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let answer = mcp_request(
        &server,
        &token,
        &[],
        "resources/read",
        "test://template/1/data",
        json!({"uri": "test://template/1/data"}),
    )
    .await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("does not declare readOnlyHint: true"),
        "{answer}"
    );
    for thread in server.store.threads(None).unwrap() {
        assert!(server.store.calls(&thread.id).unwrap().is_empty());
    }
    let _ = std::fs::remove_dir_all(root);
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
