//! From the command line: an approval is bound to what a person was shown and to the program
//! that would run. A stored request whose shown arguments were changed is refused; a decision
//! on a call whose activity was swapped while it waited is refused, and nothing runs; a call
//! approved with edited arguments shows in the transcript with what it ran with.

mod common;

use common::{toolhost, write, TempProject};
use serde_json::Value;
use std::process::Command;

/// A project where `pay` needs approval and its program appends the amount it was given to
/// `ledger.txt` (outside the store), so a test sees what ran.
fn shop() -> TempProject {
    let p = TempProject::new();
    let root = &p.root;
    write(
        root,
        "agents/agents/shop.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "shop"}}"#,
    );
    write(
        root,
        "agents/prompts/shop.json",
        r#"{"toolDescription": "Shop.", "prompt": "You sell.", "model": "m", "tools": ["pay"]}"#,
    );
    write(
        root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "script.jsonl"}"#,
    );
    write(
        root,
        "script.jsonl",
        "{\"toolCalls\": [{\"name\": \"pay\", \"arguments\": {\"amount\": 2000}}]}\n{\"text\": \"Paid.\"}\n",
    );
    write(
        root,
        "agents/tools/pay.json",
        r#"{"type": "object", "description": "Pays.", "properties": {"amount": {"type": "integer"}}, "required": ["amount"], "additionalProperties": false}"#,
    );
    write(
        root,
        "agents/activities/pay.json",
        r#"{"command": ["python3", "pay.py"], "approval": {"reason": "Moves money."}}"#,
    );
    write(root, "pay.py", &ledger_program("paid"));
    p
}

/// A program that appends `WORD AMOUNT` to the ledger and answers `WORD AMOUNT`.
fn ledger_program(word: &str) -> String {
    format!(
        "import json, sys\ncall = json.load(sys.stdin)\nline = '{word} ' + str(call['arguments']['amount'])\nopen('ledger.txt', 'a').write(line + '\\n')\nprint(json.dumps({{'status': 'success', 'result': line}}))\n"
    )
}

/// Runs the shop until it pauses at `pay`; returns the data folder, the thread and the call.
fn paused(p: &TempProject) -> (String, String, String) {
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "shop", "--data", &data, "pay"]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let thread = toolhost(&["threads", "list", "--data", &data])
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let record = show_json(&data, &thread);
    let call = record["pending"]["approvals"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    (data, thread, call)
}

fn show_json(data: &str, thread: &str) -> Value {
    let out = toolhost(&["threads", "show", thread, "--data", data, "--json"]);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn ledger(p: &TempProject) -> String {
    std::fs::read_to_string(p.root.join("ledger.txt")).unwrap_or_default()
}

#[test]
fn shown_arguments_changed_in_the_store_are_refused_and_nothing_runs() {
    let p = shop();
    let (data, thread, call) = paused(&p);
    // Someone with access to the database changes what the person will be shown: 20, while
    // the call waits with 2000.
    let db = p.root.join("data/toolhost.db");
    let edit = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute(\"UPDATE approvals SET request = json_set(request, '$.arguments.amount', 20)\")\nc.commit()",
            &db.display().to_string(),
        ])
        .status()
        .unwrap();
    assert!(edit.success());
    let shown = show_json(&data, &thread);
    assert_eq!(shown["pending"]["approvals"][0]["arguments"]["amount"], 20);
    let text = toolhost(&["threads", "show", &thread, "--data", &data]).stdout;
    assert!(
        text.contains("warning: these arguments do not match the hash recorded with the call"),
        "{text}"
    );

    let dir = p.root.display().to_string();
    let approve = toolhost(&["resume", &dir, &thread, "--data", &data, "--approve", &call]);
    assert_eq!(approve.code, 1, "{}\n{}", approve.stdout, approve.stderr);
    assert!(
        approve
            .stderr
            .contains("the arguments shown for approval are not the ones the call waits with"),
        "{}",
        approve.stderr
    );
    assert_eq!(ledger(&p), "", "nothing ran");
    let after = show_json(&data, &thread);
    assert!(after["pending"]["approvals"][0]["decision"].is_null());

    // Changed together with its hash, the request is decided, but the call, whose arguments
    // are still 2000, does not match the decision and is not run.
    let edit = Command::new("python3")
        .args([
            "-c",
            "import hashlib, sqlite3, sys\nh = hashlib.sha256(b'{\"amount\":20}').hexdigest()\nc = sqlite3.connect(sys.argv[1])\nc.execute(\"UPDATE approvals SET request = json_set(request, '$.args_hash', ?)\", (h,))\nc.commit()",
            &db.display().to_string(),
        ])
        .status()
        .unwrap();
    assert!(edit.success());
    let approve = toolhost(&["resume", &dir, &thread, "--data", &data, "--approve", &call]);
    assert_eq!(approve.code, 0, "{}\n{}", approve.stdout, approve.stderr);
    assert!(
        approve
            .stdout
            .contains("its approval was given for other arguments"),
        "{}",
        approve.stdout
    );
    assert_eq!(ledger(&p), "", "nothing ran");
}

#[test]
fn a_program_swapped_while_the_call_waits_does_not_run() {
    let p = shop();
    let (data, thread, call) = paused(&p);
    let dir = p.root.display().to_string();
    // The script behind the activity is replaced (same command line, other content).
    write(&p.root, "pay.py", &ledger_program("stolen"));
    let approve = toolhost(&["resume", &dir, &thread, "--data", &data, "--approve", &call]);
    assert_eq!(approve.code, 1, "{}\n{}", approve.stdout, approve.stderr);
    assert!(
        approve
            .stderr
            .contains("or the program behind it (its activity's command"),
        "{}",
        approve.stderr
    );
    assert_eq!(ledger(&p), "");

    // The activity's command is changed instead: the same refusal.
    write(&p.root, "pay.py", &ledger_program("paid"));
    write(&p.root, "other.py", &ledger_program("other"));
    write(
        &p.root,
        "agents/activities/pay.json",
        r#"{"command": ["python3", "other.py"], "approval": {"reason": "Moves money."}}"#,
    );
    let approve = toolhost(&["resume", &dir, &thread, "--data", &data, "--approve", &call]);
    assert_eq!(approve.code, 1, "{}\n{}", approve.stdout, approve.stderr);
    assert_eq!(ledger(&p), "");

    // Resumed without a decision, the call is answered as not run and the thread goes on.
    let resume = toolhost(&["resume", &dir, &thread, "--data", &data]);
    assert_eq!(resume.code, 0, "{}\n{}", resume.stdout, resume.stderr);
    assert!(
        resume
            .stdout
            .contains("changed while it waited for approval"),
        "{}",
        resume.stdout
    );
    assert_eq!(ledger(&p), "", "neither program ran");
}

#[test]
fn a_call_approved_with_edited_arguments_shows_what_it_ran_with() {
    let p = shop();
    let (data, thread, call) = paused(&p);
    let dir = p.root.display().to_string();
    let approve = toolhost(&[
        "resume",
        &dir,
        &thread,
        "--data",
        &data,
        "--approve",
        &call,
        "--args",
        r#"{"amount": 5}"#,
    ]);
    assert_eq!(approve.code, 0, "{}\n{}", approve.stdout, approve.stderr);
    assert_eq!(ledger(&p), "paid 5\n");
    let edited = r#"ran with arguments edited at approval: {"amount":5}"#;
    assert!(approve.stdout.contains(edited), "{}", approve.stdout);
    let shown = toolhost(&["threads", "show", &thread, "--data", &data]);
    assert!(shown.stdout.contains(edited), "{}", shown.stdout);
    // The call as the model made it is kept, and its result says what ran.
    assert!(
        shown.stdout.contains(r#"call pay({"amount":2000})"#),
        "{}",
        shown.stdout
    );
    let record = show_json(&data, &thread);
    let result = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(
        result["metadata"]["ranWith"],
        serde_json::json!({"arguments": {"amount": 5}, "editedBy": "approval"})
    );
    // The call journal records what ran, too.
    assert_eq!(record["calls"][0]["arguments"], r#"{"amount":5}"#);
}
