//! The bootstrap of a resumable sub-agent instance over HTTP (spec 001 §6): a
//! `subagent_create` whose agent requires a scoped secret returns `subagent_env_required` with a
//! request of the calling thread; `GET` on that request names the variable, `POST` stores the
//! secret in the instance (never in the parent, never shown again) and starts it at once, and
//! its session result reaches the parent as a message.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);
const CANARY: &str = "rk_live_canary_5c1f0e93";

fn project() -> std::path::PathBuf {
    let lead_script = [
        json!({"toolCalls": [{"name": "subagent_create", "arguments":
            {"name": "scout", "arguments": {"message": "map the bay"}}}]}),
        json!({"text": "waiting for the key"}),
        json!({"text": "the scout is back"}),
    ];
    let lines = |turns: &[serde_json::Value]| -> String {
        turns.iter().map(|t| format!("{t}\n")).collect()
    };
    let worker_script =
        [json!({"toolCalls": [{"name": "report", "arguments": {"text": "bay mapped"}}]})];
    let lead = lines(&lead_script);
    let worker = lines(&worker_script);
    write_project(&[
        ("agents/agents/lead.json", r#"{"type": "ai_human", "sideA": {"prompt": "lead"}}"#),
        (
            "agents/agents/helper.json",
            r#"{"type": "dual_ai", "description": "Scouts.", "maxSessionTurns": 2,
                "sideA": {"prompt": "worker", "sessionStop": {"name": "report", "messageProperty": "text"}},
                "sideB": {"prompt": "critic"}}"#,
        ),
        (
            "agents/prompts/lead.json",
            r#"{"toolDescription": "x", "prompt": "Lead.", "model": "lead_test", "includeChat": true, "includePastTools": true,
                "tools": [{"name": "helper", "blocking": false, "resumable": {"receives_messages": "side_a"}}]}"#,
        ),
        (
            "agents/prompts/worker.json",
            r#"{"toolDescription": "x", "prompt": "Scout.", "model": "worker_test", "tools": ["report"],
                "variables": [{"name": "REGION_KEY", "type": "secret", "required": true, "scoped": true}]}"#,
        ),
        ("agents/prompts/critic.json", r#"{"toolDescription": "x", "prompt": "Check.", "model": "worker_test"}"#),
        ("agents/models/lead_test.json", r#"{"provider": "test", "script": "scripts/lead.jsonl"}"#),
        ("agents/models/worker_test.json", r#"{"provider": "test", "script": "scripts/worker.jsonl"}"#),
        (
            "agents/tools/report.json",
            r#"{"type": "object", "description": "Reports.", "properties": {
                "_activity": {"type": "string", "const": "acknowledge"}, "text": {"type": "string"}},
                "required": ["text"], "additionalProperties": false}"#,
        ),
        (
            "agents/activities/acknowledge.json",
            r#"{"command": ["python3", "acknowledge.py"], "timeoutMs": 10000, "env": ["PATH"]}"#,
        ),
        (
            "acknowledge.py",
            "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"status\": \"success\", \"result\": \"reported\"}))\n",
        ),
        ("scripts/lead.jsonl", &lead),
        ("scripts/worker.jsonl", &worker),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_instance_is_given_its_secret_over_http_and_starts_at_once() {
    let server = TestServer::start_on(&project()).await;
    let token = server.admin();
    let id = server
        .create(&token, json!({"agent": "lead", "message": "go"}))
        .await;
    let mut stream = server.events(&id, &token, None).await;
    stream.until("run_ended", PATIENCE).await;

    // The parent's run ended; it has an open request for the instance's variable.
    let got = server.get(&format!("/v1/threads/{id}"), Some(&token)).await;
    assert_eq!(got.status, 200, "{}", got.text);
    let request = got.json["waiting"]["variables"][0]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request: {}", got.text))
        .to_owned();
    assert_eq!(
        got.json["waiting"]["variables"][0]["names"],
        json!(["REGION_KEY"])
    );
    let path = format!("/v1/threads/{id}/variables/{request}");
    let asked = server.get(&path, Some(&token)).await;
    assert_eq!(
        asked.json["variables"],
        json!([{"name": "REGION_KEY", "secret": true}])
    );
    let given = server
        .post(
            &path,
            Some(&token),
            &json!({"secrets": {"REGION_KEY": CANARY}}),
        )
        .await;
    assert_eq!(
        (given.status, &given.json),
        (200, &json!({"answered": true}))
    );

    // The instance ran; its result reached the parent, whose next turn answered it.
    let mut finished = false;
    let waiting = std::time::Instant::now();
    while waiting.elapsed() < PATIENCE {
        let messages = server
            .get(&format!("/v1/threads/{id}/messages"), Some(&token))
            .await;
        if messages.text.contains("the scout is back") {
            assert!(messages.text.contains("bay mapped"), "{}", messages.text);
            finished = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !finished {
        let children = server
            .get(&format!("/v1/threads?parent={id}"), Some(&token))
            .await;
        let parent = server
            .get(&format!("/v1/threads/{id}/messages"), Some(&token))
            .await;
        let texts: Vec<&serde_json::Value> = parent.json["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["content"])
            .collect();
        panic!(
            "the instance's result never reached the parent: {}\n{texts:?}",
            children.text
        );
    }
    // The secret is in no answer about either thread.
    let children = server
        .get(&format!("/v1/threads?parent={id}"), Some(&token))
        .await;
    let child = children.json["threads"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for thread in [&id, &child] {
        for route in ["", "/messages"] {
            let answer = server
                .get(&format!("/v1/threads/{thread}{route}"), Some(&token))
                .await;
            assert!(!answer.text.contains(CANARY), "{route}: {}", answer.text);
        }
    }
}
