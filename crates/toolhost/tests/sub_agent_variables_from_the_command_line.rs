//! `toolhost resume --secret` answers a deferred sub-agent instance's request (spec 001 §6): the
//! lead's `subagent_create` returned `subagent_env_required`, `threads show` names the open
//! request, and resuming the lead with the secret stores it in the instance (never printed),
//! which then runs; its result reaches the lead, whose next turn answers it.

mod common;

use common::{toolhost_with_input as toolhost_with, write, TempProject};
use serde_json::{json, Value};

const CANARY: &str = "rk_cli_canary_81d2e6f0";

fn project() -> TempProject {
    let p = TempProject::new();
    let lines = |turns: &[Value]| -> String { turns.iter().map(|t| format!("{t}\n")).collect() };
    let files = [
        (
            "agents/agents/lead.json",
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}),
        ),
        (
            "agents/agents/helper.json",
            json!({
                "type": "dual_ai", "description": "Scouts.", "maxSessionTurns": 2,
                "sideA": {"prompt": "worker", "sessionStop": {"name": "report", "messageProperty": "text"}},
                "sideB": {"prompt": "critic"}
            }),
        ),
        (
            "agents/prompts/lead.json",
            json!({
                "toolDescription": "x", "prompt": "Lead.", "model": "lead_test",
                "includeChat": true, "includePastTools": true,
                "tools": [{"name": "helper", "blocking": false, "resumable": {"receives_messages": "side_a"}}]
            }),
        ),
        (
            "agents/prompts/worker.json",
            json!({
                "toolDescription": "x", "prompt": "Scout.", "model": "worker_test", "tools": ["report"],
                "variables": [{"name": "REGION_KEY", "type": "secret", "required": true, "scoped": true}]
            }),
        ),
        (
            "agents/prompts/critic.json",
            json!({"toolDescription": "x", "prompt": "Check.", "model": "worker_test"}),
        ),
        (
            "agents/models/lead_test.json",
            json!({"provider": "test", "script": "scripts/lead.jsonl"}),
        ),
        (
            "agents/models/worker_test.json",
            json!({"provider": "test", "script": "scripts/worker.jsonl"}),
        ),
        (
            "agents/tools/report.json",
            json!({
                "type": "object", "description": "Reports.",
                "properties": {"_activity": {"type": "string", "const": "acknowledge"}, "text": {"type": "string"}},
                "required": ["text"], "additionalProperties": false
            }),
        ),
        (
            "agents/activities/acknowledge.json",
            json!({"command": ["python3", "acknowledge.py"], "timeoutMs": 10000, "env": ["PATH"]}),
        ),
    ];
    for (file, value) in files {
        write(&p.root, file, &value.to_string());
    }
    write(
        &p.root,
        "acknowledge.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"status\": \"success\", \"result\": \"reported\"}))\n",
    );
    write(
        &p.root,
        "scripts/lead.jsonl",
        &lines(&[
            json!({"toolCalls": [{"name": "subagent_create", "arguments":
                {"name": "scout", "arguments": {"message": "map the bay"}}}]}),
            json!({"text": "waiting for the key"}),
            json!({"text": "the scout is back"}),
        ]),
    );
    write(
        &p.root,
        "scripts/worker.jsonl",
        &lines(&[json!({"toolCalls": [{"name": "report", "arguments": {"text": "bay mapped"}}]})]),
    );
    p
}

#[test]
fn resume_with_a_secret_boots_the_deferred_instance_and_the_lead_hears_from_it() {
    let p = project();
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost_with(
        &[
            "run", &dir, "--agent", "lead", "--data", &data, "--json", "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let done: Value = serde_json::from_str(&run.stdout).unwrap();
    let thread = done["thread"]["id"].as_str().unwrap().to_owned();
    assert!(
        run.stdout.contains("subagent_env_required"),
        "{}",
        run.stdout
    );

    // What the lead waits for is shown, by name.
    let show = toolhost_with(&["threads", "show", &thread, "--data", &data], "");
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(show.stdout.contains("REGION_KEY"), "{}", show.stdout);

    let resume = toolhost_with(
        &[
            "resume",
            &dir,
            &thread,
            "--data",
            &data,
            "--secret",
            "REGION_KEY",
        ],
        &format!("{CANARY}\n"),
    );
    assert_eq!(resume.code, 0, "{}\n{}", resume.stdout, resume.stderr);
    let show = toolhost_with(&["threads", "show", &thread, "--data", &data, "--json"], "");
    assert!(
        show.stdout.contains("bay mapped") && show.stdout.contains("the scout is back"),
        "{}",
        show.stdout
    );
    let tree = toolhost_with(&["threads", "show", &thread, "--tree", "--data", &data], "");
    assert!(
        tree.stdout
            .lines()
            .any(|l| l.contains("scout") && l.contains("done")),
        "{}",
        tree.stdout
    );
    for text in [
        &run.stdout,
        &run.stderr,
        &resume.stdout,
        &resume.stderr,
        &show.stdout,
        &tree.stdout,
    ] {
        assert!(!text.contains(CANARY), "{text}");
    }
}
