//! Cross-origin calls are refused unless their origin is configured; a request that takes too
//! long is abandoned with a problem; a configuration that does not hold is refused at start.

mod common;

use common::*;
use std::time::Duration;
use toolhost_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_origin_is_allowed_unless_configured() {
    let server = TestServer::start().await;
    let token = server.admin();
    let answer = server
        .raw(
            "GET",
            "/v1/agents",
            Some(&token),
            &[("origin", "https://evil.example")],
            Vec::new(),
        )
        .await;
    assert_eq!(answer.status, 200);
    assert!(answer.allow_origin.is_none(), "{:?}", answer.allow_origin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_origin_is_allowed_and_others_are_not() {
    let server = TestServer::start_with(&quickstart(), |c| {
        c.allowed_origins = vec!["https://app.example".into()];
    })
    .await;
    let token = server.admin();
    let preflight = server
        .raw(
            "OPTIONS",
            "/v1/threads",
            None,
            &[
                ("origin", "https://app.example"),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "authorization, content-type",
                ),
            ],
            Vec::new(),
        )
        .await;
    assert_eq!(preflight.status, 200, "{}", preflight.text);
    assert_eq!(
        preflight.allow_origin.as_deref(),
        Some("https://app.example")
    );
    let allowed = server
        .raw(
            "GET",
            "/v1/agents",
            Some(&token),
            &[("origin", "https://app.example")],
            Vec::new(),
        )
        .await;
    assert_eq!(allowed.allow_origin.as_deref(), Some("https://app.example"));
    let other = server
        .raw(
            "GET",
            "/v1/agents",
            Some(&token),
            &[("origin", "https://evil.example")],
            Vec::new(),
        )
        .await;
    assert!(other.allow_origin.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_abandoned_with_a_problem() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(&quickstart(), |c| {
        c.request_timeout = Duration::from_millis(200);
    })
    .await;
    let token = server.admin();
    // The head promises 100 bytes of body; one comes, the rest never does.
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/threads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = within(
        "the answer to a body that never arrives",
        stream.read(&mut answer),
    )
    .await
    .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]).into_owned();
    // The client is at fault, not the server.
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert!(
        answer.contains("did not all arrive within 200 ms"),
        "{answer}"
    );
    assert_eq!(
        server.store.threads(None).unwrap(),
        vec![],
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(&quickstart(), |c| {
        c.header_read_timeout = Duration::from_millis(300);
    })
    .await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET /v1/agents HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // The server closes it (whatever it says first); a guard against a hang, not a measure.
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
        .await
        .expect("the connection was not closed");
    let text = String::from_utf8_lossy(&answer);
    assert!(!text.contains("200 OK"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holds_at_most_its_cap_of_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(&quickstart(), |c| {
        c.max_connections_per_client = 2;
    })
    .await;
    let token = server.admin();
    let request =
        format!("GET /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n");
    // Two open connections, each answered once and kept alive.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buf = [0u8; 64];
        let n = within("the answer on a held connection", stream.read(&mut buf))
            .await
            .unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        held.push(stream);
    }
    // A third is closed before it is served.
    let mut third = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let _ = third.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = within(
        "the close of a connection past the cap",
        third.read_to_end(&mut answer),
    )
    .await;
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    // Once one of the two is closed, a new connection is served again.
    drop(held.pop());
    let mut waited = 0;
    loop {
        let mut again = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let _ = again.write_all(request.as_bytes()).await;
        let mut buf = [0u8; 64];
        let n = within("an answer on a new connection", again.read(&mut buf))
            .await
            .unwrap_or(0);
        if buf[..n].starts_with(b"HTTP/1.1 200") {
            break;
        }
        // The server sees the close a moment later: a guard against a hang, not a measure.
        waited += 1;
        assert!(waited < 6000, "no connection was served after one closed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_with_a_path_is_refused_before_anything_is_served() {
    let store: std::sync::Arc<dyn toolhost_store::Store> =
        std::sync::Arc::new(toolhost_store::SqliteStore::in_memory().unwrap());
    let runtime = toolhost_runtime::engine::Runtime::load(&quickstart(), store)
        .await
        .unwrap();
    let config = ServerConfig {
        allowed_origins: vec!["https://app.example/ui".into()],
        ..ServerConfig::default()
    };
    let server = toolhost_server::Server::new(std::sync::Arc::new(runtime), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = server.run(listener, async {}).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("allowed origin \"https://app.example/ui\""),
        "{error}"
    );
}
