//! From the command line: a run that needs approval pauses (exit 3) and says how to continue; the
//! pause survives a SIGKILL of the process that resumes it, and the approved call runs exactly
//! once; a secret given with `--secret` appears nowhere in plain text.

mod common;

use common::{
    output_of, output_with_input, toolhost_with_input as toolhost_with, write, TempProject,
};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A shop: `pay` needs approval and appends a line to `ledger` (outside the store); `slow`
/// sleeps; `charge_card` uses a secret and fails quoting it.
fn shop(script: &str) -> TempProject {
    let p = TempProject::new();
    let root = &p.root;
    let ledger = root.join("ledger.txt");
    write(
        root,
        "agents/agents/shop.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "shop"}}"#,
    );
    write(
        root,
        "agents/prompts/shop.json",
        r#"{"toolDescription": "Shop.", "prompt": "You sell.", "model": "m", "tools": ["pay", "slow", "charge_card"]}"#,
    );
    write(
        root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "script.jsonl"}"#,
    );
    write(root, "script.jsonl", script);
    let obj = r#"{"type": "object", "description": "Does it.", "properties": {"amount": {"type": "integer"}}, "additionalProperties": false}"#;
    write(root, "agents/tools/pay.json", obj);
    write(root, "agents/tools/slow.json", obj);
    write(
        root,
        "agents/tools/charge_card.json",
        r#"{"type": "object", "description": "Charges a card.", "properties": {"amount": {"type": "integer"}}, "variables": [{"name": "CARD_TOKEN", "type": "secret", "required": true}]}"#,
    );
    write(
        root,
        "agents/activities/pay.json",
        r#"{"command": ["python3", "pay.py"], "approval": {"reason": "Moves money."}}"#,
    );
    write(
        root,
        "agents/activities/slow.json",
        r#"{"command": ["python3", "slow.py"]}"#,
    );
    write(
        root,
        "agents/activities/charge_card.json",
        r#"{"command": ["python3", "charge.py"]}"#,
    );
    write(
        root,
        "pay.py",
        &format!(
            "import json, sys\ncall = json.load(sys.stdin)\nopen({:?}, 'a').write(call['call_id'] + '\\n')\nprint(json.dumps({{'status': 'success', 'result': 'paid'}}))\n",
            ledger.display().to_string()
        ),
    );
    write(
        root,
        "slow.py",
        "import json, sys, time\njson.load(sys.stdin)\ntime.sleep(5)\nprint(json.dumps({'status': 'success', 'result': 'slept'}))\n",
    );
    write(
        root,
        "charge.py",
        "import json, sys\ncall = json.load(sys.stdin)\ntoken = call['variables']['CARD_TOKEN']\nprint(json.dumps({'status': 'error', 'error': 'card service refused token ' + token, 'stack': 'at charge(' + token + ')'}))\n",
    );
    p
}

#[test]
fn a_paused_call_survives_a_sigkill_and_runs_exactly_once_when_approved() {
    let project = shop(
        r#"
{"toolCalls": [{"name": "pay", "arguments": {"amount": 20}}]}
{"toolCalls": [{"name": "slow", "arguments": {"amount": 1}}]}
{"text": "Paid."}
"#,
    );
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let run = toolhost_with(
        &["run", &dir, "--agent", "shop", "--data", &data, "pay 20"],
        "",
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("waiting for approval: call "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("reason: Moves money."),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("--approve call_"), "{}", run.stderr);

    let show = toolhost_with(&["threads", "list", "--data", &data], "");
    let thread = show
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let record: Value = serde_json::from_str(
        &toolhost_with(&["threads", "show", &thread, "--data", &data, "--json"], "").stdout,
    )
    .unwrap();
    let call = record["pending"]["approvals"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Approve, and kill the process while the next (slow) call runs.
    let ledger = project.root.join("ledger.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["resume", &dir, &thread, "--data", &data, "--approve", &call])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ledger.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe_kill(child.id());
    let status = child.wait().unwrap();
    assert!(status.code().is_none(), "the process was not killed");

    // A fresh process continues; the approved call is not run again.
    let again = toolhost_with(&["resume", &dir, &thread, "--data", &data], "");
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        format!("{call}\n")
    );
    // Replaying the decision is refused.
    let replay = toolhost_with(
        &["resume", &dir, &thread, "--data", &data, "--approve", &call],
        "",
    );
    assert_eq!(replay.code, 1, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("already decided"),
        "{}",
        replay.stderr
    );
    let shown = toolhost_with(&["threads", "show", &thread, "--data", &data], "");
    assert!(
        shown
            .stdout
            .contains(&format!("approval of {call} (pay): approved by cli")),
        "{}",
        shown.stdout
    );
}

fn unsafe_kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_secret_appears_nowhere_in_plain_text() {
    const CANARY: &str = "tok_canary_5d1e88b0";
    let project = shop(
        r#"
{"toolCalls": [{"name": "charge_card", "arguments": {"amount": 5}}]}
{"text": "The card was refused."}
"#,
    );
    let dir = project.root.display().to_string();
    let data_dir = project.root.join("data");
    let data = data_dir.display().to_string();
    // Without the secret the thread pauses for it, naming it and nothing else.
    let run = toolhost_with(
        &["run", &dir, "--agent", "shop", "--data", &data, "charge 5"],
        "",
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("waiting for variables"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("--secret CARD_TOKEN"), "{}", run.stderr);
    let thread = toolhost_with(&["threads", "list", "--data", &data], "")
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let resume = toolhost_with(
        &[
            "resume",
            &dir,
            &thread,
            "--data",
            &data,
            "--secret",
            "CARD_TOKEN",
        ],
        &format!("{CANARY}\n"),
    );
    assert_eq!(resume.code, 0, "{}\n{}", resume.stdout, resume.stderr);
    assert!(
        resume
            .stdout
            .contains("card service refused token [redacted CARD_TOKEN]"),
        "{}",
        resume.stdout
    );
    let mut seen = vec![run.stdout, run.stderr, resume.stdout, resume.stderr];
    for args in [
        vec!["threads", "show", &thread, "--data", &data, "--json"],
        vec!["threads", "show", &thread, "--data", &data],
    ] {
        let out = toolhost_with(&args, "");
        seen.push(out.stdout);
        seen.push(out.stderr);
    }
    for text in &seen {
        assert!(!text.contains(CANARY), "the secret was printed:\n{text}");
    }
    let mut files = 0;
    for entry in std::fs::read_dir(&data_dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        files += 1;
        assert!(
            !bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
            "the secret is in {}",
            path.display()
        );
    }
    assert!(files >= 2, "the data folder holds the database and the key");
}

#[test]
fn a_pause_for_a_secret_says_to_give_it_on_standard_input_with_the_data_folder() {
    const CANARY: &str = "tok_canary_hint_7c2e";
    let project = shop(
        r#"
{"toolCalls": [{"name": "charge_card", "arguments": {"amount": 5}}]}
{"text": "The card was refused."}
"#,
    );
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let run = toolhost_with(
        &["run", &dir, "--agent", "shop", "--data", &data, "charge 5"],
        "",
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let hint = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("continue with: "))
        .unwrap_or_else(|| panic!("no hint:\n{}", run.stderr));
    // The secret is never asked for on the command line, where shell history keeps it.
    assert!(!hint.contains("--var"), "{hint}");
    assert!(hint.ends_with(" --secret CARD_TOKEN"), "{hint}");
    assert!(hint.contains(&format!(" --data {data} ")), "{hint}");
    assert!(run.stderr.contains("standard input"), "{}", run.stderr);

    // The hint works as printed, from another folder, with the value on standard input.
    let command = hint.replacen("toolhost", env!("CARGO_BIN_EXE_toolhost"), 1);
    let out = output_with_input(
        Command::new("sh")
            .args(["-c", &command])
            .current_dir(std::env::temp_dir())
            .env_remove("TOOLHOST_SECRET_KEY"),
        &format!("{CANARY}\n"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("refused token [redacted CARD_TOKEN]"),
        "{stdout}"
    );
    assert!(!stdout.contains(CANARY), "{stdout}");
}

#[test]
fn an_approval_hint_names_the_data_folder_it_was_given() {
    let project = shop(
        r#"
{"toolCalls": [{"name": "pay", "arguments": {"amount": 20}}]}
{"text": "Paid."}
"#,
    );
    let dir = project.root.display().to_string();
    let data = project.root.join("my data").display().to_string();
    let run = toolhost_with(
        &["run", &dir, "--agent", "shop", "--data", &data, "pay 20"],
        "",
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let hints: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("toolhost resume"))
        .collect();
    assert_eq!(hints.len(), 2, "{}", run.stderr);
    for hint in &hints {
        // A folder with a space is quoted for the shell.
        assert!(hint.contains(&format!(" --data '{data}' ")), "{hint}");
    }
    let approve = hints[0].strip_prefix("continue with: ").unwrap();
    let command = approve.replacen("toolhost", env!("CARGO_BIN_EXE_toolhost"), 1);
    let out = output_of(
        Command::new("sh")
            .args(["-c", &command])
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null()),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok pay: paid"));
}
