//! `toolhost run` starts only an agent whose every definition is sound: otherwise it exits 2,
//! names each file and missing name, and leaves the data folder as it was. `tools list`
//! reports a blueprint whose `_activity` names no activity. Warnings call a file "not loaded"
//! only when it was not. A project named by a relative path runs its activities like one
//! named by an absolute path. The example project loads without a warning.

mod common;

use common::{quickstart, toolhost, toolhost_in, write, TempProject};
use std::path::Path;

/// A project under `root/p` whose agent `a` runs prompt `p` on a scripted model that calls
/// `ok` once and then answers; the tool `ok` runs the program `activities/ok.sh` of the project.
fn runnable_project(root: &Path) {
    let p = root.join("p");
    write(
        &p,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &p,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Go.", "model": "m", "tools": ["ok"]}"#,
    );
    write(
        &p,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "script.jsonl"}"#,
    );
    write(
        &p,
        "script.jsonl",
        "{\"toolCalls\": [{\"name\": \"ok\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
    );
    write(
        &p,
        "agents/tools/ok.json",
        r#"{"type": "object", "description": "Says ok.", "properties": {"_activity": {"type": "string", "const": "ok"}}}"#,
    );
    write(
        &p,
        "agents/activities/ok.json",
        r#"{"command": ["activities/ok.sh"], "timeoutMs": 10000}"#,
    );
    write(
        &p,
        "activities/ok.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"status\": \"success\", \"result\": \"ok from the script\"}'\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        p.join("activities/ok.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

#[test]
fn an_activity_runs_the_same_whether_the_project_path_is_relative_or_absolute() {
    let root = TempProject::new();
    runnable_project(&root.root);
    let absolute = root.root.join("p").display().to_string();
    for project in ["p", "./p", absolute.as_str()] {
        let run = toolhost_in(
            &root.root,
            &[
                "run", project, "--agent", "a", "--data", ":memory:", "--json", "go",
            ],
        );
        assert_eq!(run.code, 0, "{project}: {}", run.stderr);
        assert!(
            run.stdout.contains("ok from the script"),
            "{project}: {}",
            run.stdout
        );
    }
    // From inside the project too.
    let run = toolhost_in(
        &root.root.join("p"),
        &[
            "run", ".", "--agent", "a", "--data", ":memory:", "--json", "go",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ok from the script"), "{}", run.stdout);
}

#[test]
fn a_run_whose_agent_reaches_a_missing_definition_exits_2_and_touches_no_data() {
    let root = TempProject::new();
    runnable_project(&root.root);
    let p = root.root.join("p");
    // The prompt offers a tool that does not exist, and the tool it has names a missing
    // activity.
    write(
        &p,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Go.", "model": "m", "tools": ["ok", "lookup"]}"#,
    );
    std::fs::remove_file(p.join("agents/activities/ok.json")).unwrap();
    let data = root.root.join("data");
    let run = toolhost(&[
        "run",
        &p.display().to_string(),
        "--agent",
        "a",
        "--data",
        &data.display().to_string(),
        "go",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("agent \"a\" cannot run"),
        "{}",
        run.stderr
    );
    let problem_lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("agents/prompts/p.json") || l.contains("agents/tools/ok.json"))
        .filter(|l| !l.starts_with("warning:"))
        .collect();
    assert!(
        problem_lines
            .iter()
            .any(|l| l.contains("agents/prompts/p.json") && l.contains("\"lookup\"")),
        "{}",
        run.stderr
    );
    assert!(
        problem_lines
            .iter()
            .any(|l| l.contains("agents/tools/ok.json") && l.contains("activity \"ok\"")),
        "{}",
        run.stderr
    );
    assert!(!data.exists(), "the data folder was created");
}

#[test]
fn tools_list_reports_a_blueprint_whose_activity_is_missing() {
    let root = TempProject::new();
    runnable_project(&root.root);
    let p = root.root.join("p");
    let listed = toolhost(&["tools", "list", &p.display().to_string()]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("explicit (activity ok)"),
        "{}",
        listed.stdout
    );

    std::fs::remove_file(p.join("agents/activities/ok.json")).unwrap();
    let listed = toolhost(&["tools", "list", &p.display().to_string()]);
    assert_eq!(listed.code, 2, "{}", listed.stderr);
    assert!(
        listed.stderr.contains("agents/tools/ok.json")
            && listed.stderr.contains(
                "at /properties/_activity: names activity \"ok\", which is not in agents/activities/"
            ),
        "{}",
        listed.stderr
    );
}

#[test]
fn warnings_call_only_files_that_did_not_load_not_loaded() {
    let root = TempProject::new();
    runnable_project(&root.root);
    let p = root.root.join("p");
    // Neither is reached by agent `a`: one file does not load, one loads but names a missing
    // prompt.
    write(&p, "agents/agents/broken.json", r#"{"type": "ai_human"}"#);
    write(
        &p,
        "agents/agents/orphan.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "gone"}}"#,
    );
    let run = toolhost(&[
        "run",
        &p.display().to_string(),
        "--agent",
        "a",
        "--data",
        ":memory:",
        "go",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let warning = |file: &str| {
        run.stderr
            .lines()
            .find(|l| l.starts_with("warning:") && l.contains(file))
            .unwrap_or_else(|| panic!("no warning for {file}: {}", run.stderr))
            .to_owned()
    };
    assert!(warning("broken.json").ends_with("(the file was not loaded)"));
    let orphan = warning("orphan.json");
    assert!(orphan.contains("names prompt \"gone\""), "{orphan}");
    assert!(!orphan.contains("not loaded"), "{orphan}");
}

#[test]
fn the_example_project_loads_without_a_warning() {
    let listed = toolhost(&["tools", "list", &quickstart()]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("explicit (activity create_ticket)"),
        "{}",
        listed.stdout
    );
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "assistant",
        "--data",
        ":memory:",
        "What is the weather in Oslo?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}
