//! Process activities run real programs: the call arrives as JSON on standard input, a result
//! comes back on standard output, and every failure is an error result naming the activity.

use serde_json::{json, Map};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_core::ToolStatus;
use toolhost_runtime::activity::{ActivityInput, ProcessActivity};

fn project() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolhost-activity-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn activity(dir: &Path, def: serde_json::Value) -> ProcessActivity {
    ProcessActivity::parse("probe", &def.to_string(), dir).unwrap()
}

fn input() -> ActivityInput {
    ActivityInput {
        tool: "probe_tool".into(),
        arguments: json!({"city": "Oslo"}),
        thread_id: Some("thread-1".into()),
        call_id: "call-9".into(),
        idempotency_key: "thread-1:call-9".into(),
        variables: Map::new(),
    }
}

const ECHO: &str = r#"
import json, sys
call = json.load(sys.stdin)
print(json.dumps({"status": "success", "result": json.dumps(call, sort_keys=True)}))
"#;

#[tokio::test]
async fn the_call_arrives_on_stdin_and_the_result_comes_back() {
    let dir = project();
    let a = activity(&dir, json!({"command": ["python3", "-c", ECHO]}));
    let r = a.run(&input()).await;
    assert_eq!(r.status, ToolStatus::Success, "{r:?}");
    let call: serde_json::Value = serde_json::from_str(r.result.as_deref().unwrap()).unwrap();
    assert_eq!(call["arguments"], json!({"city": "Oslo"}));
    assert_eq!(call["call_id"], json!("call-9"));
    assert_eq!(call["idempotency_key"], json!("thread-1:call-9"));
    assert_eq!(call["thread_id"], json!("thread-1"));
}

#[tokio::test]
async fn a_failing_program_is_an_error_result_with_its_status_and_stderr() {
    let dir = project();
    let a = activity(
        &dir,
        json!({"command": ["sh", "-c", "echo 'no such city' >&2; exit 3"]}),
    );
    let r = a.run(&input()).await;
    assert_eq!(r.status, ToolStatus::Error);
    assert_eq!(
        r.error.as_deref(),
        Some("activity probe: exited with status 3: no such city")
    );
}

#[tokio::test]
async fn a_crash_by_signal_is_reported() {
    let dir = project();
    let a = activity(&dir, json!({"command": ["sh", "-c", "kill -SEGV $$"]}));
    let r = a.run(&input()).await;
    assert_eq!(
        r.error.as_deref(),
        Some("activity probe: was killed by signal 11")
    );
}

#[tokio::test]
async fn past_the_timeout_the_whole_process_tree_is_killed() {
    let dir = project();
    let pid_file = dir.join("grandchild.pid");
    let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
    // The timeout leaves the shell ample time to start its grandchild and name it.
    let a = activity(
        &dir,
        json!({"command": ["sh", "-c", script], "timeoutMs": 2000}),
    );
    // `sleep 30` would end by itself; only the timeout gives this error before it does.
    let r = a.run(&input()).await;
    assert_eq!(
        r.error.as_deref(),
        Some("activity probe: timed out after 2000 ms; its process tree was killed")
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the shell wrote its grandchild's pid before the timeout")
        .trim()
        .parse()
        .unwrap();
    // The grandchild is gone (or a zombie being reaped): signal 0 fails or /proc says dead.
    // Waited for up to 30 s: a guard, not a measure.
    let mut alive = true;
    for _ in 0..1500 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        alive = !stat.is_empty() && !stat.contains(") Z");
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive, "grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn output_that_is_not_a_result_is_an_error_naming_the_activity() {
    let dir = project();
    let a = activity(&dir, json!({"command": ["sh", "-c", "echo hello"]}));
    let r = a.run(&input()).await;
    let e = r.error.unwrap();
    assert!(
        e.starts_with("activity probe: its output is not a ToolResult")
            && e.ends_with("it printed: hello"),
        "{e}"
    );
}

#[tokio::test]
async fn output_past_the_cap_is_cut_and_says_so() {
    let dir = project();
    let a = activity(
        &dir,
        json!({"command": ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"], "maxOutputBytes": 1000}),
    );
    let r = a.run(&input()).await;
    assert_eq!(
        r.error.as_deref(),
        Some("activity probe: its output passed the cap of 1000 bytes and was cut")
    );
}

#[tokio::test]
async fn the_program_sees_only_the_environment_it_is_given() {
    let dir = project();
    let script =
        r#"printf '{"status":"success","result":"%s|%s"}' "${HOME:-unset}" "${PATH:+set}""#;
    let a = activity(
        &dir,
        json!({"command": ["/bin/sh", "-c", script], "env": ["PATH"]}),
    );
    let r = a.run(&input()).await;
    assert_eq!(r.result.as_deref(), Some("unset|set"), "{r:?}");
}

#[test]
fn bad_definitions_are_refused_with_the_reason() {
    let dir = project();
    for (def, expected) in [
        (json!({"command": []}), "must list the program"),
        (
            json!({"command": "python3 tool.py"}),
            "not a valid activity definition",
        ),
        (
            json!({"command": ["x"], "cwd": "../elsewhere"}),
            "must be a folder inside the project",
        ),
        (json!({"command": ["x"], "timeoutMs": 0}), "greater than 0"),
        (
            json!({"command": ["x"], "stopGraceMs": 600_001}),
            "`stopGraceMs` is 600001, more than the 600000 it may be",
        ),
        (
            json!({"command": ["x"], "shell": true}),
            "unknown field `shell`",
        ),
    ] {
        let err = ProcessActivity::parse("bad", &def.to_string(), &dir).unwrap_err();
        assert!(err.to_string().starts_with("activity bad: "), "{err}");
        assert!(err.to_string().contains(expected), "{def}: {err}");
    }
}

#[tokio::test]
async fn a_missing_program_is_an_error_result() {
    let dir = project();
    let a = activity(&dir, json!({"command": ["scripts/missing.py"]}));
    let r = a.run(&input()).await;
    let e = r.error.unwrap();
    assert!(
        e.starts_with("activity probe: could not start") && e.contains("scripts/missing.py"),
        "{e}"
    );
}

#[test]
fn the_input_s_debug_names_variables_but_never_shows_their_values() {
    let mut call = input();
    call.variables
        .insert("TOKEN".into(), json!("tok-never-in-a-log-81f2"));
    let shown = format!("{call:?}");
    assert!(shown.contains("TOKEN"), "{shown}");
    assert!(!shown.contains("tok-never"), "{shown}");
}
