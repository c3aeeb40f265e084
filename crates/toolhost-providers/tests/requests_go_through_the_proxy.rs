//! Requests go through the proxy the environment names, as curl sends them: a plain `http://`
//! request forwarded in absolute form, an `https://` one tunnelled with `CONNECT` (TLS runs
//! inside the tunnel, end to end), streamed answers alike, and hosts `NO_PROXY` names reached
//! directly. A real proxy on loopback records what passed through it.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost_providers::{
    ChatRole, HttpModel, Model, ModelConfig, ModelErrorKind, ModelRequest, ProxyConfig,
};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

/// What the proxy saw of one connection: its request line and its `Proxy-Authorization`.
#[derive(Debug, Clone, PartialEq)]
struct Passed {
    line: String,
    auth: Option<String>,
}

/// A forwarding and tunnelling HTTP proxy on loopback.
struct Proxy {
    url: String,
    passed: Arc<Mutex<Vec<Passed>>>,
}

impl Proxy {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let passed = Arc::new(Mutex::new(Vec::new()));
        let log = passed.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, log.clone()));
            }
        });
        Proxy { url, passed }
    }

    fn passed(&self) -> Vec<Passed> {
        self.passed.lock().expect("lock").clone()
    }
}

/// Reads a request head, records it, and relays: a `CONNECT` opens a tunnel, any other
/// request is sent on in origin form.
async fn relay(mut client: TcpStream, log: Arc<Mutex<Vec<Passed>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let line = head.lines().next().unwrap_or_default().to_owned();
    let auth = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(n, _)| n.eq_ignore_ascii_case("proxy-authorization"))
        })
        .map(|(_, v)| v.trim().to_owned());
    log.lock().expect("lock").push(Passed {
        line: line.clone(),
        auth,
    });
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "CONNECT" {
        let Ok(mut upstream) = TcpStream::connect(target).await else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
            return;
        };
        let _ = client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await;
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return;
    }
    // `POST http://host:port/path HTTP/1.1` goes on as `POST /path HTTP/1.1` to host:port.
    let Some(rest) = target.strip_prefix("http://") else {
        return;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Ok(mut upstream) = TcpStream::connect(authority).await else {
        return;
    };
    let origin = head.replacen(target, if path.is_empty() { "/" } else { path }, 1);
    let _ = upstream.write_all(origin.as_bytes()).await;
    let _ = upstream.write_all(&buf[end..]).await;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// A server that keeps the first bytes it is sent and hangs up: where a TLS handshake that
/// came through a tunnel lands.
async fn first_bytes_server() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let got = Arc::new(Mutex::new(Vec::new()));
    let log = got.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut chunk = [0u8; 512];
            if let Ok(n) = socket.read(&mut chunk).await {
                log.lock().expect("lock").extend_from_slice(&chunk[..n]);
            }
        }
    });
    (addr, got)
}

/// The proxy configuration the environment reader makes of these variables.
fn proxies(vars: &[(&str, &str)]) -> ProxyConfig {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    ProxyConfig::from_vars(|name| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
        .expect("proxy variables")
}

/// A model for `provider` at `base`, through `proxy`, with no retries.
fn proxied_model(provider: &str, base: &str, proxy: &ProxyConfig) -> HttpModel {
    let mut c = ModelConfig::new(provider, "test-model");
    c.base_url = Some(base.to_owned());
    c.api_key_env = Some("TEST_KEY".into());
    c.retry.max_attempts = 1;
    HttpModel::with_proxy(&c, env, proxy).expect("model")
}

#[tokio::test]
async fn plain_http_is_forwarded_whole_and_streamed() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("openai/text_no_usage.json")),
        Reply::sse(&fixture("openai/stream_tool_calls.sse"), 60),
    ])
    .await;
    let proxy = Proxy::start().await;
    let config = proxies(&[("HTTP_PROXY", &proxy.url)]);
    let model = proxied_model("openai", &format!("{}/v1", server.base), &config);

    let answer = model.complete(&request()).await.expect("answer");
    assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    let (streamed, _) = streamed(&model, &request()).await;
    assert_eq!(streamed.tool_calls.len(), 2);

    let forwarded = format!("POST {}/v1/chat/completions HTTP/1.1", server.base);
    let passed = proxy.passed();
    assert_eq!(passed.len(), 2, "{passed:?}");
    assert!(
        passed
            .iter()
            .all(|p| p.line == forwarded && p.auth.is_none()),
        "{passed:?}"
    );
    // The server behind it got both in origin form.
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.path == "/v1/chat/completions"));
}

#[tokio::test]
async fn https_is_tunnelled_with_connect_and_tls_runs_inside() {
    let (target, got) = first_bytes_server().await;
    let proxy = Proxy::start().await;
    let with_auth = proxy.url.replace("http://", "http://agent:s3cret@");
    let config = proxies(&[
        ("https_proxy", &with_auth),
        ("http_proxy", "http://127.0.0.1:9"),
    ]);
    let model = proxied_model("anthropic", &format!("https://{target}"), &config);

    // The destination is no TLS server, so the handshake fails: but it went through the tunnel.
    let error = model.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind(), ModelErrorKind::Transient, "{error:?}");
    let streaming = model
        .complete_streaming(&request(), &|_| {})
        .await
        .unwrap_err();
    assert_eq!(streaming.kind(), ModelErrorKind::Transient);

    let passed = proxy.passed();
    assert_eq!(passed.len(), 2, "{passed:?}");
    for p in &passed {
        assert_eq!(p.line, format!("CONNECT {target} HTTP/1.1"));
        // agent:s3cret, as Basic credentials on the CONNECT.
        assert_eq!(p.auth.as_deref(), Some("Basic YWdlbnQ6czNjcmV0"));
    }
    // What reached the destination is a TLS handshake record (content type 22, version 3.x):
    // the client's own TLS, not the proxy's.
    let bytes = got.lock().expect("lock").clone();
    assert_eq!(&bytes[..2], &[0x16, 0x03], "{bytes:?}");
    let text = error.to_string();
    assert!(
        text.starts_with("Anthropic Messages: connection failed"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

#[tokio::test]
async fn a_forwarding_proxy_gets_its_credentials_on_the_request() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/text_no_usage.json"),
    )])
    .await;
    let proxy = Proxy::start().await;
    let with_auth = proxy.url.replace("http://", "http://agent:s3cret@");
    let model = proxied_model(
        "openai",
        &format!("{}/v1", server.base),
        &proxies(&[("ALL_PROXY", &with_auth)]),
    );
    model.complete(&request()).await.expect("answer");
    let passed = proxy.passed();
    assert_eq!(passed.len(), 1);
    assert_eq!(passed[0].auth.as_deref(), Some("Basic YWdlbnQ6czNjcmV0"));
}

#[tokio::test]
async fn hosts_no_proxy_names_are_reached_directly() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("openai/text_no_usage.json")),
        Reply::json(200, &fixture("openai/text_no_usage.json")),
    ])
    .await;
    let proxy = Proxy::start().await;
    for no_proxy in [
        ("NO_PROXY", "example.com, 127.0.0.1"),
        ("no_proxy", "127.0.0.0/8"),
    ] {
        let config = proxies(&[("HTTP_PROXY", &proxy.url), no_proxy]);
        let model = proxied_model("openai", &format!("{}/v1", server.base), &config);
        let answer = model.complete(&request()).await.expect("answer");
        assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    }
    assert_eq!(server.seen().len(), 2);
    assert_eq!(proxy.passed(), vec![]);
}

#[tokio::test]
async fn a_proxy_that_cannot_be_reached_is_named_in_the_error() {
    let server = ReplayServer::start(vec![]).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = proxies(&[("HTTP_PROXY", &format!("http://u:pw@127.0.0.1:{port}"))]);
    let model = proxied_model("openai", &format!("{}/v1", server.base), &config);
    let error = model.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind(), ModelErrorKind::Transient);
    let text = error.to_string();
    assert!(
        text.contains(&format!("through the proxy http://127.0.0.1:{port}/")),
        "{text}"
    );
    assert!(!text.contains("pw@"), "{text}");
    assert!(server.seen().is_empty());
}
