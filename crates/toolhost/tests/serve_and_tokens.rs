//! `toolhost tokens` and `toolhost serve` as real processes: a token is printed once and kept
//! only as a hash, the server answers it over loopback, a revoked one is refused, and SIGTERM
//! stops the server cleanly; expired and revoked tokens are not counted as active, and a token
//! made with `--project` opens the server of that project.

mod common;

use common::{
    http_get, lines_of, next_line, quickstart, rest_of, served_address, terminate, toolhost,
    wait_or_kill, TempProject, PATIENCE,
};
use serde_json::Value;
use std::process::{Command, Stdio};

#[test]
fn a_token_made_on_the_command_line_opens_the_server_until_it_is_revoked() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let bad = toolhost(&[
        "tokens", "create", "x", "--scope", "root", "--data", &data_dir,
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("\"root\" is not a scope"),
        "{}",
        bad.stderr
    );

    let created = toolhost(&[
        "tokens", "create", "ci", "--scope", "read,run", "--data", &data_dir, "--json",
    ]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created: Value = serde_json::from_str(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_owned();
    let id = created["record"]["id"].as_str().unwrap().to_owned();
    assert!(token.starts_with(&format!("thk_{id}_")));
    let secret = token.rsplit('_').next().unwrap();
    let db = std::fs::read(data.root.join("data/toolhost.db")).unwrap();
    let wal = std::fs::read(data.root.join("data/toolhost.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the token's secret was stored"
        );
    }
    let listed = toolhost(&["tokens", "list", "--data", &data_dir]);
    assert!(listed.stdout.contains(&id) && listed.stdout.contains("read,run"));
    assert!(!listed.stdout.contains(secret));

    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args([
            "serve",
            &quickstart(),
            "--data",
            &data_dir,
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let first = next_line(&out);
    let addr = served_address(&first);
    let second = next_line(&out);
    assert!(second.contains("1 active tokens"), "{second}");

    let (status, body) = http_get(&addr, "/v1/agents", &token);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"assistant\""), "{body}");

    let revoked = toolhost(&["tokens", "revoke", &id, "--data", &data_dir]);
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    let (status, body) = http_get(&addr, "/v1/agents", &token);
    assert_eq!(status, 401, "{body}");
    let again = toolhost(&["tokens", "revoke", &id, "--data", &data_dir]);
    assert_eq!(again.code, 2);

    terminate(&server);
    let status = wait_or_kill(server, "toolhost serve", PATIENCE).status;
    let rest = rest_of(&out);
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("stopped:"), "{rest}");
}

#[test]
fn toolhost_toml_sets_what_serve_uses_and_an_unknown_key_is_an_error() {
    let project = TempProject::new();
    common::write(
        &project.root,
        "toolhost.toml",
        "data = \"from-toml\"\n\n[server]\nlisten = \"127.0.0.1:0\"\nallowed_origin = [\"https://app.example\"]\n",
    );
    let dir = project.root.display().to_string();
    let bad = toolhost(&["serve", &dir]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("toolhost.toml")
            && bad.stderr.contains("unknown field `allowed_origin`"),
        "{}",
        bad.stderr
    );
    let origin_with_path = toolhost(&["serve", &dir, "--allowed-origin", "https://app.example/ui"]);
    assert_eq!(origin_with_path.code, 2);

    common::write(
        &project.root,
        "toolhost.toml",
        "data = \"from-toml\"\n\n[server]\nlisten = \"127.0.0.1:0\"\nallowed_origins = [\"https://app.example\"]\n",
    );
    // Run from another folder: the data folder is the project's, not the working folder's.
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &dir])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let first = next_line(&out);
    assert!(first.contains("http://127.0.0.1:"), "{first}");
    assert!(first.contains("from-toml)"), "{first}");
    assert!(project.root.join("from-toml/toolhost.db").exists());
    terminate(&server);
    assert_eq!(
        wait_or_kill(server, "toolhost serve", PATIENCE)
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn serve_counts_only_the_tokens_that_still_open_it() {
    use toolhost_server::auth::{mint, Scope};
    use toolhost_store::{now_millis, SqliteStore, Store};
    let data = TempProject::new();
    let data_dir = data.root.join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    {
        let store = SqliteStore::open(&data_dir.join("toolhost.db")).unwrap();
        let mut expired = mint("old", &[Scope::Read], None, None).unwrap();
        expired.record.expires_at = Some(now_millis() - 1_000);
        store.create_token(&expired.record).unwrap();
        let revoked = mint("gone", &[Scope::Read], None, None).unwrap();
        store.create_token(&revoked.record).unwrap();
        assert!(store.revoke_token(&revoked.record.id).unwrap());
        let valid = mint("ci", &[Scope::Read], None, Some(3_600_000)).unwrap();
        store.create_token(&valid.record).unwrap();
    }
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &quickstart(), "--listen", "127.0.0.1:0", "--data"])
        .arg(&data_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let (first, second) = (next_line(&out), next_line(&out));
    assert!(second.contains("(1 active tokens;"), "{first}{second}");
    terminate(&server);
    assert_eq!(
        wait_or_kill(server, "toolhost serve", PATIENCE)
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn a_token_made_for_a_project_opens_the_server_of_that_project() {
    let project = TempProject::new();
    common::write(
        &project.root,
        "toolhost.toml",
        "data = \"state\"\n\n[server]\nlisten = \"127.0.0.1:0\"\n\n[tokens]\ndefault_expires_in = \"1h\"\n",
    );
    let dir = project.root.display().to_string();
    // Both from another folder: each finds the data folder through the project's toolhost.toml.
    let elsewhere = std::env::temp_dir();
    let created = common::toolhost_in(
        &elsewhere,
        &[
            "tokens",
            "create",
            "ci",
            "--scope",
            "read",
            "--project",
            &dir,
            "--json",
        ],
    );
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created: Value = serde_json::from_str(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_owned();
    assert!(created["record"]["expires_at"].is_i64(), "{created}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &dir])
        .current_dir(&elsewhere)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let (first, second) = (next_line(&out), next_line(&out));
    assert!(second.contains("(1 active tokens;"), "{first}{second}");
    let addr = served_address(&first);
    let (status, body) = http_get(&addr, "/v1/agents", &token);
    assert_eq!(status, 200, "{body}");
    terminate(&server);
    assert_eq!(
        wait_or_kill(server, "toolhost serve", PATIENCE)
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn server_oauth_in_toolhost_toml_serves_the_resource_metadata_and_a_bad_table_is_an_error() {
    let project = TempProject::new();
    common::scripted_agent(&project.root, &["think"], "");
    let dir = project.root.display().to_string();
    let table = |oauth: &str| {
        common::write(
            &project.root,
            "toolhost.toml",
            &format!(
                "[server]\nlisten = \"127.0.0.1:0\"\nmcp_agent = \"a\"\n\n[server.oauth]\n{oauth}"
            ),
        );
    };
    table("issuer = \"http://auth.example\"\nresource = \"https://tools.example/mcp\"\n");
    let bad = toolhost(&["serve", &dir]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("oauth.issuer (http://auth.example) must be an https URL"),
        "{}",
        bad.stderr
    );
    table("issuer = \"https://auth.example\"\nresource = \"https://tools.example/mcp\"\naudience = \"x\"\n");
    let unknown = toolhost(&["serve", &dir]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("unknown field `audience`"),
        "{}",
        unknown.stderr
    );

    table("issuer = \"https://auth.example\"\nresource = \"https://tools.example/mcp\"\nscope_prefix = \"toolhost:\"\n");
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &dir])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..3 {
        lines.push(next_line(&out));
    }
    let addr = served_address(&lines[0]);
    assert!(
        lines[2].contains("/mcp also takes access tokens of https://auth.example")
            && lines[2].contains("https://tools.example/.well-known/oauth-protected-resource/mcp"),
        "{lines:?}"
    );
    let (status, body) = http_get(&addr, "/.well-known/oauth-protected-resource/mcp", "none");
    assert_eq!(status, 200, "{body}");
    let metadata: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(metadata["authorization_servers"][0], "https://auth.example");
    assert_eq!(metadata["resource"], "https://tools.example/mcp");
    assert_eq!(metadata["scopes_supported"][0], "toolhost:run");
    terminate(&server);
    assert_eq!(
        wait_or_kill(server, "toolhost serve", PATIENCE)
            .status
            .code(),
        Some(0)
    );
}
