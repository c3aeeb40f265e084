//! `toolhost` keeps its threads in a PostgreSQL database when `--store` (or `TOOLHOST_STORE`)
//! names one: a run in one process is read by another, and what goes wrong is one sentence that
//! never shows the password.

mod common;

use common::{output_of, quickstart, Run};
use serde_json::Value;
use std::process::{Command, Stdio};
use toolhost_store::conformance::fresh_database::FreshDatabase;

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn toolhost(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(args)
        .env_remove("TOOLHOST_STORE")
        .env_remove("TOOLHOST_SECRET_KEY")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    Run::from(output_of(&mut command))
}

#[test]
fn a_run_on_postgres_is_read_back_by_another_process() {
    let database = FreshDatabase::new();
    let url = database.url();
    let run = toolhost(
        &[
            "run",
            &quickstart(),
            "--agent",
            "assistant",
            "--store",
            &url,
            "--json",
            "What's the weather in Oslo?",
        ],
        &[("TOOLHOST_SECRET_KEY", KEY)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let record: Value = serde_json::from_str(&run.stdout).unwrap();
    let id = record["thread"]["id"].as_str().unwrap().to_owned();
    // Another process, told the store by the environment, finds the thread whole.
    let listed = toolhost(&["threads", "list", "--json"], &[("TOOLHOST_STORE", &url)]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let threads: Value = serde_json::from_str(&listed.stdout).unwrap();
    let threads = threads.as_array().expect("a list of threads");
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(threads[0]["id"], id.as_str());
    assert_eq!(threads[0]["status"], "done");
    let shown = toolhost(&["threads", "show", &id, "--json", "--data", &url], &[]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("7 °C"), "{}", shown.stdout);
    // The thread is in the database, not in a folder.
    let count: i64 = database
        .client()
        .query_one("SELECT COUNT(*) FROM messages WHERE thread = $1", &[&id])
        .unwrap()
        .get(0);
    assert!(count >= 4, "{count} messages stored");
}

#[test]
fn a_database_that_cannot_be_reached_is_one_sentence_without_the_password() {
    let run = toolhost(
        &[
            "threads",
            "list",
            "--store",
            "postgres://bob:hunter2@127.0.0.1:1/toolhost",
        ],
        &[],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains(
            "error: the store at postgres://bob@127.0.0.1:1/toolhost could not be opened."
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("refused"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
}

#[test]
fn a_run_on_postgres_needs_the_key_every_node_shares() {
    let database = FreshDatabase::new();
    let run = toolhost(
        &[
            "run",
            &quickstart(),
            "--agent",
            "assistant",
            "--store",
            &database.url(),
            "hello",
        ],
        &[],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("a PostgreSQL store needs TOOLHOST_SECRET_KEY"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_data_folder_moves_to_postgres_with_all_its_history() {
    let folder = common::TempProject::new();
    let data = folder.root.join("data").display().to_string();
    let run = toolhost(
        &[
            "run",
            &quickstart(),
            "--agent",
            "assistant",
            "--data",
            &data,
            "--json",
            "What's the weather in Oslo?",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let record: Value = serde_json::from_str(&run.stdout).unwrap();
    let id = record["thread"]["id"].as_str().unwrap().to_owned();
    let database = FreshDatabase::new();
    let url = database.url();
    let moved = toolhost(&["migrate", "--from", &data, "--to", &url], &[]);
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    assert!(
        moved.stdout.contains("copied 1 threads"),
        "{}",
        moved.stdout
    );
    assert!(
        moved.stderr.contains("rows of messages"),
        "{}",
        moved.stderr
    );
    assert!(
        moved
            .stdout
            .contains("give every node its contents as TOOLHOST_SECRET_KEY"),
        "{}",
        moved.stdout
    );
    // The thread reads the same from the folder and from the database.
    let from_folder = toolhost(&["threads", "show", &id, "--json", "--data", &data], &[]);
    let from_database = toolhost(&["threads", "show", &id, "--json", "--store", &url], &[]);
    assert_eq!(from_database.code, 0, "{}", from_database.stderr);
    assert_eq!(from_folder.stdout, from_database.stdout);
    // Into a database that holds threads already: refused, with a reason.
    let again = toolhost(&["migrate", "--from", &data, "--to", &url, "--json"], &[]);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("already holds"), "{}", again.stderr);
    // Somewhere that is not a database: a usage error.
    let nowhere = toolhost(&["migrate", "--from", &data, "--to", "elsewhere"], &[]);
    assert_eq!(nowhere.code, 2, "{}", nowhere.stderr);
}
