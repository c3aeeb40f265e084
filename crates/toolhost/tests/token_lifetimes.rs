//! How long a token lives, on the command line: `--expires-in`, the `[tokens]` table of the
//! project's toolhost.toml (a default and a limit), durations that are refused, and `--project`
//! finding the data folder `toolhost serve` uses. Expired tokens are made through the store,
//! with an expiry in the past, so no test waits.

mod common;

use common::{toolhost, toolhost_in, write, Run, TempProject};
use serde_json::Value;
use std::path::Path;
use toolhost_server::auth::{mint, Scope};
use toolhost_store::{display_millis, now_millis, SqliteStore, Store};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// The stored record of a token created with `--json`.
fn record(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let created: Value = serde_json::from_str(&run.stdout).unwrap();
    created["record"].clone()
}

/// How long the token of `record` lives, in milliseconds; `None` when it never expires.
fn lifetime(record: &Value) -> Option<i64> {
    let created = record["created_at"].as_i64().unwrap();
    record["expires_at"].as_i64().map(|at| at - created)
}

fn listed(data: &str) -> Vec<Value> {
    let run = toolhost(&["tokens", "list", "--data", data, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_value(serde_json::from_str(&run.stdout).unwrap()).unwrap()
}

#[test]
fn expires_in_sets_when_a_token_expires_and_the_list_shows_it() {
    let project = TempProject::new();
    let data = project.root.join("data").display().to_string();
    for (text, ms) in [("12h", 12 * HOUR), ("30m", 30 * 60_000), ("90d", 90 * DAY)] {
        let made = toolhost(&[
            "tokens",
            "create",
            text,
            "--scope",
            "read",
            "--expires-in",
            text,
            "--data",
            &data,
            "--json",
        ]);
        assert_eq!(lifetime(&record(&made)), Some(ms), "{text}");
    }
    let forever = record(&toolhost(&[
        "tokens", "create", "forever", "--scope", "read", "--data", &data, "--json",
    ]));
    assert_eq!(lifetime(&forever), None, "no --expires-in, no settings");

    let rows = listed(&data);
    assert_eq!(rows.len(), 4);
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    for name in ["12h", "30m", "90d"] {
        assert!(
            row(name)["expires_at"].as_i64().unwrap() > now_millis(),
            "{name}"
        );
        assert_eq!(row(name)["expired"], false);
    }
    assert_eq!(row("forever")["expires_at"], Value::Null);
    assert_eq!(row("forever")["expired"], false);

    let text = toolhost(&["tokens", "list", "--data", &data]);
    assert!(
        text.stdout.lines().next().unwrap().contains("EXPIRES"),
        "{}",
        text.stdout
    );
    let twelve = text.stdout.lines().find(|l| l.contains("12h")).unwrap();
    let at = row("12h")["expires_at"].as_i64().unwrap();
    assert!(twelve.contains(&display_millis(at)), "{twelve}");
    assert!(twelve.contains("active since"), "{twelve}");
    let never = text.stdout.lines().find(|l| l.contains("forever")).unwrap();
    assert!(
        never.contains("never") && never.contains("active since"),
        "{never}"
    );
}

#[test]
fn an_expired_token_is_marked_in_the_list_and_can_still_be_revoked() {
    let project = TempProject::new();
    let data = project.root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let expired_at = now_millis() - DAY;
    let id = {
        let store = SqliteStore::open(&data.join("toolhost.db")).unwrap();
        let mut minted = mint("old", &[Scope::Read], None, None).unwrap();
        minted.record.expires_at = Some(expired_at);
        store.create_token(&minted.record).unwrap();
        minted.record.id
    };
    let data = data.display().to_string();
    let rows = listed(&data);
    assert_eq!(rows[0]["expires_at"], expired_at);
    assert_eq!(rows[0]["expired"], true);
    let text = toolhost(&["tokens", "list", "--data", &data]);
    let line = text.stdout.lines().find(|l| l.contains(&id)).unwrap();
    assert!(
        line.ends_with(&format!("expired {}", display_millis(expired_at))),
        "{line}"
    );

    let revoked = toolhost(&["tokens", "revoke", &id, "--data", &data]);
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    let text = toolhost(&["tokens", "list", "--data", &data]);
    assert!(text.stdout.contains("revoked "), "{}", text.stdout);
}

#[test]
fn zero_and_nonsense_durations_are_refused_with_one_sentence() {
    let project = TempProject::new();
    let data = project.root.join("data").display().to_string();
    for bad in [
        "0d", "0m", "abc", "90", "1.5h", "-3d", "12 h", "5y", "36501d",
    ] {
        let run = toolhost(&[
            "tokens",
            "create",
            "x",
            "--scope",
            "read",
            "--expires-in",
            bad,
            "--data",
            &data,
        ]);
        assert_eq!(run.code, 2, "{bad}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{bad}: {}", run.stderr);
        assert_eq!(
            lines[0],
            format!("error: --expires-in {bad} cannot be used.")
        );
        assert!(
            lines[1].starts_with(&format!("  cause: \"{bad}\" is ")),
            "{}",
            lines[1]
        );
        assert!(run.stdout.is_empty(), "no token printed: {}", run.stdout);
    }
    assert!(listed(&data).is_empty(), "nothing stored");
}

/// A project whose toolhost.toml keeps its data in `state/` and sets `[tokens]` to `tokens`.
fn project_with(tokens: &str) -> TempProject {
    let project = TempProject::new();
    write(
        &project.root,
        "toolhost.toml",
        &format!("data = \"state\"\n\n[tokens]\n{tokens}"),
    );
    project
}

fn create_in(cwd: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["tokens", "create", "t", "--scope", "run", "--json"];
    args.extend_from_slice(extra);
    toolhost_in(cwd, &args)
}

#[test]
fn toolhost_toml_gives_the_default_lifetime_and_the_longest() {
    let project = project_with("default_expires_in = \"90d\"\nmax_expires_in = \"365d\"\n");
    let dir = project.root.display().to_string();
    // From another folder: --project finds the project's data folder, as serve does.
    let elsewhere = std::env::temp_dir();
    let made = create_in(&elsewhere, &["--project", &dir]);
    assert_eq!(lifetime(&record(&made)), Some(90 * DAY));
    assert!(project.root.join("state/toolhost.db").exists());
    let longest = create_in(&elsewhere, &["--project", &dir, "--expires-in", "365d"]);
    assert_eq!(lifetime(&record(&longest)), Some(365 * DAY));

    let too_long = create_in(&elsewhere, &["--project", &dir, "--expires-in", "366d"]);
    assert_eq!(too_long.code, 2, "{}", too_long.stderr);
    let file = project.root.join("toolhost.toml");
    assert_eq!(
        too_long.stderr.trim_end(),
        format!(
            "error: --expires-in 366d is longer than max_expires_in = \"365d\" of [tokens] in {}.",
            file.display()
        )
    );
    let state = project.root.join("state").display().to_string();
    assert_eq!(listed(&state).len(), 2, "the refused token was not stored");
}

#[test]
fn a_limit_without_a_default_refuses_tokens_that_never_expire() {
    let project = project_with("max_expires_in = \"30d\"\n");
    let never = create_in(&project.root, &[]);
    assert_eq!(never.code, 2, "{}", never.stderr);
    assert!(
        never.stderr.starts_with("error: a token that never expires is longer than max_expires_in = \"30d\" of [tokens] in ./toolhost.toml."),
        "{}",
        never.stderr
    );
    let month = create_in(&project.root, &["--expires-in", "4w"]);
    assert_eq!(lifetime(&record(&month)), Some(28 * DAY));

    let project = project_with("default_expires_in = \"60d\"\nmax_expires_in = \"30d\"\n");
    let default_too_long = create_in(&project.root, &[]);
    assert_eq!(default_too_long.code, 2);
    assert!(
        default_too_long
            .stderr
            .contains("default_expires_in = \"60d\" is longer than max_expires_in = \"30d\""),
        "{}",
        default_too_long.stderr
    );
}

#[test]
fn a_bad_tokens_table_is_an_error_naming_the_file_and_the_key() {
    for (table, key) in [
        (
            "default_expires = \"90d\"\n",
            "unknown field `default_expires`",
        ),
        (
            "default_expires_in = \"ninety days\"\n",
            "default_expires_in = \"ninety days\"",
        ),
        ("max_expires_in = \"0d\"\n", "max_expires_in = \"0d\""),
        ("max_expires_in = 30\n", "max_expires_in = 30"),
    ] {
        let project = project_with(table);
        let run = create_in(&project.root, &[]);
        assert_eq!(run.code, 2, "{table}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("error: the project's toolhost.toml cannot be used.")
                && run.stderr.contains("toolhost.toml")
                && run.stderr.contains(key),
            "{table}: {}",
            run.stderr
        );
        assert!(!project.root.join("state").exists(), "nothing opened");
    }
}

#[test]
fn the_current_folders_toolhost_toml_is_used_and_data_wins_over_it() {
    let project = project_with("default_expires_in = \"12h\"\n");
    let here = create_in(&project.root, &[]);
    assert_eq!(lifetime(&record(&here)), Some(12 * HOUR));
    let state = project.root.join("state").display().to_string();
    assert_eq!(listed(&state).len(), 1);

    // --data names another folder; the project's [tokens] settings still apply.
    let other = project.root.join("other").display().to_string();
    let there = create_in(&project.root, &["--data", &other]);
    assert_eq!(lifetime(&record(&there)), Some(12 * HOUR));
    assert_eq!(listed(&other).len(), 1);
    assert_eq!(listed(&state).len(), 1);

    // A folder without toolhost.toml is no project: `.toolhost` in it, no settings.
    let plain = TempProject::new();
    let made = create_in(&plain.root, &[]);
    assert_eq!(lifetime(&record(&made)), None);
    assert!(plain.root.join(".toolhost/toolhost.db").exists());

    let missing = project.root.join("no-such-folder").display().to_string();
    let run = create_in(&plain.root, &["--project", &missing]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim_end(),
        format!("error: the project folder {missing} does not exist.")
    );
}

#[test]
fn the_help_says_which_project_and_data_folder_tokens_use() {
    let help = toolhost(&["tokens", "create", "--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    for words in [
        "--expires-in <DURATION>",
        "default_expires_in",
        "max_expires_in",
        "--project <DIR>",
        "the current folder when it holds a toolhost.toml",
        "--data <DATA_DIR>",
    ] {
        assert!(help.stdout.contains(words), "{words}: {}", help.stdout);
    }
}
