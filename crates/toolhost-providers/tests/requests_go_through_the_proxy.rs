//! Requests go through the proxy the environment names, as curl sends them: a plain `http://`
//! request forwarded in absolute form, an `https://` one tunnelled with `CONNECT` (TLS runs
//! inside the tunnel, end to end), streamed answers alike, and hosts `NO_PROXY` names reached
//! directly. A real proxy on loopback records what passed through it; behind it, a TLS model
//! server whose authority the model is told to trust.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use toolhost_providers::{
    ChatRole, HttpModel, Model, ModelConfig, ModelErrorKind, ModelRequest, Network, ProxyConfig,
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
    model_on(provider, base, Network::direct().with_proxy(proxy.clone()))
}

fn model_on(provider: &str, base: &str, network: Network) -> HttpModel {
    let mut c = ModelConfig::new(provider, "test-model");
    // The replayed answers are chat completions.
    if provider == "openai" {
        c.api = Some("chat".into());
    }
    c.base_url = Some(base.to_owned());
    c.api_key_env = Some("TEST_KEY".into());
    c.retry.max_attempts = 1;
    HttpModel::with_network(&c, env, &network).expect("model")
}

/// An HTTPS model server on loopback with the test authority's certificate for 127.0.0.1:
/// answers each connection with the next `(content type, body)` and keeps each request line.
async fn tls_model_server(
    replies: Vec<(&'static str, String)>,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(fixture("tls/server.pem").as_bytes())
            .collect::<Result<_, _>>()
            .expect("certificate");
    let key = PrivateKeyDer::from_pem_slice(fixture("tls/server.key").as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for (content_type, body) in replies {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let Ok(mut tls) = acceptor.accept(socket).await else {
                continue;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
                match tls.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < head_end + length {
                match tls.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            log.lock()
                .expect("lock")
                .push(head.lines().next().unwrap_or_default().to_owned());
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(reply.as_bytes()).await;
            let _ = tls.shutdown().await;
        }
    });
    (addr, seen)
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
async fn a_tls_server_behind_the_tunnel_answers_whole_and_streamed() {
    let (target, seen) = tls_model_server(vec![
        ("application/json", fixture("anthropic/tool_use.json")),
        (
            "text/event-stream",
            fixture("anthropic/stream_tool_use.sse"),
        ),
    ])
    .await;
    let proxy = Proxy::start().await;
    let network = Network::direct()
        .with_proxy(proxies(&[("HTTPS_PROXY", &proxy.url)]))
        .trusting_pem(
            "tests/fixtures/tls/ca.pem",
            fixture("tls/ca.pem").as_bytes(),
        )
        .expect("authority");
    let model = model_on("anthropic", &format!("https://{target}"), network);

    let answer = model.complete(&request()).await.expect("answer");
    assert_eq!(answer.tool_calls.len(), 2);
    let (streamed, deltas) = streamed(&model, &request()).await;
    assert_eq!(streamed.text.as_deref(), Some("Checking two cities."));
    assert!(deltas.len() > 2, "{deltas:?}");

    // The proxy saw only the tunnels; the requests themselves reached the server inside TLS.
    let passed = proxy.passed();
    assert_eq!(passed.len(), 2, "{passed:?}");
    assert!(passed
        .iter()
        .all(|p| p.line == format!("CONNECT {target} HTTP/1.1")));
    assert_eq!(
        *seen.lock().expect("lock"),
        vec!["POST /v1/messages HTTP/1.1".to_owned(); 2]
    );

    // Without the authority the same server is refused: the roots are still checked.
    let (target, _) = tls_model_server(vec![("application/json", "{}".to_owned())]).await;
    let untrusted = model_on(
        "anthropic",
        &format!("https://{target}"),
        Network::direct().with_proxy(proxies(&[("HTTPS_PROXY", &proxy.url)])),
    );
    let error = untrusted.complete(&request()).await.unwrap_err();
    assert!(error.to_string().contains("certificate"), "{error}");
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
