//! Who may do what: every endpoint but health, readiness and the OpenAPI document needs a valid
//! token; scopes decide what it may do; a token limited to some agents cannot see or reach another
//! agent's threads; an expired token reaches nothing, and says when it expired.

mod common;

use common::*;
use serde_json::json;
use toolhost_server::auth::Scope;
use toolhost_store::{display_millis, now_millis};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_need_no_token_and_everything_else_does() {
    let server = TestServer::start().await;
    let health = server.get("/health", None).await;
    assert_eq!(
        (health.status, &health.json),
        (200, &json!({"status": "ok"}))
    );
    let ready = server.get("/ready", None).await;
    assert_eq!(
        (ready.status, &ready.json),
        (200, &json!({"status": "ready"}))
    );
    for path in ["/v1/agents", "/v1/threads", "/v1/threads/x/events"] {
        let detail = server.get(path, None).await.problem(401);
        assert!(detail.contains("Authorization: Bearer"), "{detail}");
    }
    let unknown = server.get("/v1/nothing-here", Some(&server.admin())).await;
    assert!(unknown.problem(404).contains("/v1/nothing-here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_malformed_or_revoked_token_is_refused_alike() {
    let server = TestServer::start().await;
    let good = server.token(&[Scope::Read], None);
    assert_eq!(server.get("/v1/agents", Some(&good)).await.status, 200);

    let (id, _) = good.strip_prefix("thk_").unwrap().split_once('_').unwrap();
    let wrong_secret = format!("thk_{id}_{}", "0".repeat(64));
    let unknown_id = format!("thk_000000000000_{}", "0".repeat(64));
    for token in [wrong_secret.as_str(), unknown_id.as_str()] {
        let detail = server.get("/v1/agents", Some(token)).await.problem(401);
        assert_eq!(detail, "the token is unknown or revoked");
    }
    for token in ["abc", "thk_short_x", &good[..good.len() - 1]] {
        let detail = server.get("/v1/agents", Some(token)).await.problem(401);
        assert!(detail.contains("not a toolhost token"), "{token}: {detail}");
    }
    let basic = server
        .raw(
            "GET",
            "/v1/agents",
            None,
            &[("authorization", "Basic YWxpY2U6cHc=")],
            Vec::new(),
        )
        .await;
    assert!(basic.problem(401).contains("Bearer <token>"));

    assert!(server.store.revoke_token(id).unwrap());
    let detail = server.get("/v1/agents", Some(&good)).await.problem(401);
    assert_eq!(detail, "the token is unknown or revoked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_does_only_what_its_scopes_allow() {
    let server = TestServer::start().await;
    let reader = server.token(&[Scope::Read], None);
    let detail = server
        .post(
            "/v1/threads",
            Some(&reader),
            &json!({"agent": "assistant", "message": "hi"}),
        )
        .await
        .problem(403);
    assert_eq!(detail, "this token lacks the \"run\" scope (it has: read)");
    assert_eq!(
        server.store.threads(None).unwrap().len(),
        0,
        "nothing stored"
    );

    let runner = server.token(&[Scope::Run], None);
    let listed = server.get("/v1/threads", Some(&runner)).await;
    assert!(listed.problem(403).contains("\"read\" scope"));
    let decided = server
        .post(
            "/v1/threads/x/approvals/y",
            Some(&runner),
            &json!({"decision": "approve"}),
        )
        .await;
    assert!(decided.problem(403).contains("\"approve\" scope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_one_agent_cannot_see_or_reach_another_agents_threads() {
    let server = TestServer::start().await;
    let admin = server.admin();
    let theirs = server
        .create(&admin, json!({"agent": "assistant", "message": "Weather?"}))
        .await;
    let cashier_only = server.token(&[Scope::Admin], Some(vec!["cashier"]));

    let agents = server.get("/v1/agents", Some(&cashier_only)).await;
    let names: Vec<&str> = agents.json["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cashier"]);
    let listed = server.get("/v1/threads", Some(&cashier_only)).await;
    assert_eq!(listed.json["threads"], json!([]));
    for path in [
        format!("/v1/threads/{theirs}"),
        format!("/v1/threads/{theirs}/messages"),
        format!("/v1/threads/{theirs}/events"),
        format!("/v1/threads/{theirs}/approvals"),
    ] {
        let detail = server.get(&path, Some(&cashier_only)).await.problem(404);
        assert_eq!(detail, format!("there is no thread {theirs}"), "{path}");
    }
    let sent = server
        .post(
            &format!("/v1/threads/{theirs}/messages"),
            Some(&cashier_only),
            &json!({"message": "hijack"}),
        )
        .await;
    sent.problem(404);
    let stop = server
        .post(
            &format!("/v1/threads/{theirs}/stop"),
            Some(&cashier_only),
            &json!({}),
        )
        .await;
    stop.problem(404);
    let created = server
        .post(
            "/v1/threads",
            Some(&cashier_only),
            &json!({"agent": "assistant", "message": "hi"}),
        )
        .await;
    assert!(created.problem(403).contains("agent \"assistant\""));
    // Let the admin's run finish, then check nothing of the refused requests was stored.
    server
        .events(&theirs, &admin, None)
        .await
        .until_ended("done", std::time::Duration::from_secs(60))
        .await;
    assert!(server.store.queued(&theirs).unwrap().is_empty());
    let messages = server.store.messages(&theirs).unwrap();
    assert_eq!(messages.len(), 7, "the run's own messages and no other");
    assert!(messages
        .iter()
        .all(|m| m.content.as_deref() != Some("hijack")));
    assert_eq!(server.store.threads(None).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_when_its_token_is_revoked() {
    let server = TestServer::start().await;
    let admin = server.admin();
    let id = server
        .create(&admin, json!({"agent": "assistant", "message": "Weather?"}))
        .await;
    let reader = server.token(&[Scope::Read], None);
    let mut stream = server.events(&id, &reader, None).await;
    stream
        .until("message", std::time::Duration::from_secs(60))
        .await;
    let token_id = reader
        .strip_prefix("thk_")
        .unwrap()
        .split('_')
        .next()
        .unwrap();
    assert!(server.store.revoke_token(token_id).unwrap());
    let rest = stream
        .until("error", std::time::Duration::from_secs(60))
        .await;
    assert!(rest.last().unwrap().data["detail"]
        .as_str()
        .unwrap()
        .contains("revoked"));
    assert!(
        stream.next_within("the end of the stream").await.is_none(),
        "the stream ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused_with_when_it_expired_and_nothing_else() {
    let server = TestServer::start().await;
    let expired_at = now_millis() - 60_000;
    let expired = server.token_expiring_at(&[Scope::Admin], expired_at);
    let valid = server.token_expiring_at(&[Scope::Admin], now_millis() + 3_600_000);
    assert_eq!(server.get("/v1/agents", Some(&valid)).await.status, 200);

    for path in ["/v1/agents", "/v1/threads", "/v1/events"] {
        let detail = server.get(path, Some(&expired)).await.problem(401);
        assert_eq!(
            detail,
            format!("the token expired at {}", display_millis(expired_at)),
            "{path}"
        );
    }
    let created = server
        .post(
            "/v1/threads",
            Some(&expired),
            &json!({"agent": "assistant", "message": "hi"}),
        )
        .await;
    assert!(created.problem(401).starts_with("the token expired at"));
    assert!(
        server.store.threads(None).unwrap().is_empty(),
        "nothing stored"
    );

    // Only the holder of the secret learns that the token expired.
    let (id, _) = expired
        .strip_prefix("thk_")
        .unwrap()
        .split_once('_')
        .unwrap();
    let wrong_secret = format!("thk_{id}_{}", "0".repeat(64));
    let detail = server
        .get("/v1/agents", Some(&wrong_secret))
        .await
        .problem(401);
    assert_eq!(detail, "the token is unknown or revoked");
    // Revoked and expired: revoked, as for any revoked token.
    assert!(server.store.revoke_token(id).unwrap());
    let detail = server.get("/v1/agents", Some(&expired)).await.problem(401);
    assert_eq!(detail, "the token is unknown or revoked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_when_its_token_expires() {
    let server = TestServer::start().await;
    let admin = server.admin();
    let id = server
        .create(&admin, json!({"agent": "assistant", "message": "Weather?"}))
        .await;
    // Valid for a day when the stream opens, and the stream serves it; then its expiry comes
    // (set to now in the store, as the clock reaching it would): the stream looks at its token
    // again and closes.
    let reader = server.token_expiring_at(&[Scope::Read], now_millis() + 86_400_000);
    let mut stream = server.events(&id, &reader, None).await;
    stream
        .until("message", std::time::Duration::from_secs(60))
        .await;
    let expires_at = now_millis();
    let (token_id, _) = reader
        .strip_prefix("thk_")
        .unwrap()
        .split_once('_')
        .unwrap();
    expire_in_store(&server, token_id, expires_at);
    let rest = stream
        .until("error", std::time::Duration::from_secs(60))
        .await;
    assert!(
        now_millis() >= expires_at,
        "the stream was closed before its token expired"
    );
    assert_eq!(
        rest.last().unwrap().data["detail"],
        format!(
            "the token of this stream expired at {}; the stream is closed",
            display_millis(expires_at)
        )
    );
    assert!(
        stream.next_within("the end of the stream").await.is_none(),
        "the stream ended"
    );
}

/// Sets the expiry of the stored token `id` to `at` (the store offers no way to change it: the
/// row is changed with Python's sqlite3, as another process would).
fn expire_in_store(server: &TestServer, id: &str, at: i64) {
    let db = server.data.join("toolhost.db");
    let script = "import sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1], timeout=60)\n\
                  n = c.execute('UPDATE tokens SET expires_at = ? WHERE id = ?', (int(sys.argv[2]), sys.argv[3])).rowcount\n\
                  c.commit()\n\
                  sys.exit(0 if n == 1 else 1)\n";
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&db)
        .arg(at.to_string())
        .arg(id)
        .status()
        .expect("python3 runs");
    assert!(
        status.success(),
        "the token's expiry was not changed in {}",
        db.display()
    );
}
