//! OAuth at `/mcp`: the server as a resource server of an authorization server on loopback.
//!
//! The key server here is real HTTP (axum on loopback) serving RFC 8414 metadata and a JWK set
//! the test changes; tokens are signed with real keys (`ring`: Ed25519 and P-256). The last
//! test uses a real authorization server (oidc-provider, RS256) and the official Python SDK's
//! OAuth client, which finds everything from the 401 on its own.

mod common;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::*;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_server::auth::Scope;
use toolhost_server::OAuthSettings;

fn example() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/js-tools")
}

/// A signing key of the authorization server.
enum Signer {
    Ed(Ed25519KeyPair),
    Ec(EcdsaKeyPair),
}

impl Signer {
    fn ed25519() -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        Signer::Ed(Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap())
    }

    fn p256() -> Self {
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Signer::Ec(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap())
    }

    fn alg(&self) -> &'static str {
        match self {
            Signer::Ed(_) => "EdDSA",
            Signer::Ec(_) => "ES256",
        }
    }

    /// The public key as a JWK named `kid`.
    fn jwk(&self, kid: &str) -> Value {
        match self {
            Signer::Ed(key) => json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "use": "sig",
                "x": URL_SAFE_NO_PAD.encode(key.public_key().as_ref())}),
            Signer::Ec(key) => {
                let point = key.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
            }
        }
    }

    /// A compact JWS of `claims` with the header naming `kid`.
    fn sign(&self, kid: &str, claims: &Value) -> String {
        let header = json!({"alg": self.alg(), "typ": "at+jwt", "kid": kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = match self {
            Signer::Ed(key) => key.sign(input.as_bytes()).as_ref().to_vec(),
            Signer::Ec(key) => key
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// An authorization server's metadata and keys on loopback; the keys can change.
struct KeyServer {
    issuer: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetched: Arc<AtomicUsize>,
}

impl KeyServer {
    async fn start(keys: Vec<Value>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(keys));
        let fetched = Arc::new(AtomicUsize::new(0));
        let metadata = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
            "token_endpoint": format!("{issuer}/token")});
        let (set, count) = (keys.clone(), fetched.clone());
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || async move { axum::Json(metadata) }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    axum::Json(json!({"keys": *set.lock().unwrap()}))
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        KeyServer {
            issuer,
            keys,
            fetched,
        }
    }
}

fn fetcher() -> Arc<toolhost_providers::fetch::HttpFetcher> {
    let network = toolhost_providers::Network::direct();
    Arc::new(
        toolhost_providers::fetch::HttpFetcher::new(&network, Duration::from_secs(5), 1 << 20)
            .unwrap(),
    )
}

async fn server_for(issuer: &str, change: impl FnOnce(&mut OAuthSettings)) -> (TestServer, String) {
    let issuer = issuer.to_owned();
    let resource = Arc::new(Mutex::new(String::new()));
    let seen = resource.clone();
    let server = TestServer::start_at(&example(), move |config, addr: SocketAddr| {
        let url = format!("http://{addr}/mcp");
        *seen.lock().unwrap() = url.clone();
        let mut settings = OAuthSettings::new(&issuer, &url, fetcher());
        change(&mut settings);
        config.mcp_agent = Some("assistant".to_owned());
        config.oauth = Some(settings);
    })
    .await;
    let resource = resource.lock().unwrap().clone();
    (server, resource)
}

fn claims(issuer: &str, audience: &str, subject: &str, scope: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({"iss": issuer, "aud": audience, "sub": subject, "scope": scope,
           "iat": now, "exp": now + 300})
}

fn initialize() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
    .into_bytes()
}

const HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

async fn post_mcp(
    server: &TestServer,
    token: Option<&str>,
    session: Option<&str>,
    body: Vec<u8>,
) -> Answer {
    let mut headers = HEADERS.to_vec();
    if let Some(id) = session {
        headers.push(("mcp-session-id", id));
        headers.push(("mcp-protocol-version", "2025-11-25"));
    }
    server.raw("POST", "/mcp", token, &headers, body).await
}

/// The value of `name="..."` in a `WWW-Authenticate` header.
fn param<'a>(challenge: &'a str, name: &str) -> Option<&'a str> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    challenge[start..].split('"').next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_and_the_challenge_lead_a_client_to_the_authorization_server() {
    let keys = KeyServer::start(Vec::new()).await;
    let (server, resource) = server_for(&keys.issuer, |_| {}).await;
    let none = post_mcp(&server, None, None, initialize()).await;
    assert_eq!(none.status, 401, "{}", none.text);
    let challenge = none.header("www-authenticate").unwrap().to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    let metadata_url = param(&challenge, "resource_metadata").unwrap();
    assert_eq!(
        metadata_url,
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            server.addr
        )
    );
    assert_eq!(param(&challenge, "scope"), Some("run"));
    assert_eq!(
        param(&challenge, "error"),
        None,
        "no token, no error: {challenge}"
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata = server.get(path, None).await;
        assert_eq!(metadata.status, 200, "{path}: {}", metadata.text);
        assert_eq!(
            metadata.json,
            json!({"resource": resource, "authorization_servers": [keys.issuer],
                   "scopes_supported": ["run"], "bearer_methods_supported": ["header"],
                   "resource_name": "toolhost"})
        );
    }
    // Without OAuth configured there is no metadata.
    let plain =
        TestServer::start_with(&example(), |c| c.mcp_agent = Some("assistant".into())).await;
    let missing = plain
        .get("/.well-known/oauth-protected-resource/mcp", None)
        .await;
    assert_eq!(missing.status, 404);
    let none = post_mcp(&plain, None, None, initialize()).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_signed_by_the_servers_keys_for_this_resource_open_sessions() {
    let (ed, ec) = (Signer::ed25519(), Signer::p256());
    let keys = KeyServer::start(vec![ed.jwk("ed-1"), ec.jwk("ec-1")]).await;
    let (server, resource) = server_for(&keys.issuer, |_| {}).await;
    for (signer, kid) in [(&ed, "ed-1"), (&ec, "ec-1")] {
        let token = signer.sign(kid, &claims(&keys.issuer, &resource, "ada", "run"));
        let opened = post_mcp(&server, Some(&token), None, initialize()).await;
        assert_eq!(opened.status, 200, "{kid}: {}", opened.text);
        let session = opened.header("mcp-session-id").unwrap().to_owned();
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
        let listed = post_mcp(&server, Some(&token), Some(&session), list.into_bytes()).await;
        assert_eq!(listed.status, 200, "{}", listed.text);
        assert!(listed.text.contains("get_weather"), "{}", listed.text);
    }
    // The keys were fetched once, through the issuer's metadata.
    assert_eq!(keys.fetched.load(Ordering::SeqCst), 1);
    // A toolhost token still works beside them.
    let own = server.token(&[Scope::Run], None);
    assert_eq!(
        post_mcp(&server, Some(&own), None, initialize())
            .await
            .status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_that_must_not_be_taken_are_refused_saying_why() {
    let (ed, stranger) = (Signer::ed25519(), Signer::ed25519());
    let keys = KeyServer::start(vec![ed.jwk("ed-1")]).await;
    let (server, resource) = server_for(&keys.issuer, |_| {}).await;
    let good = claims(&keys.issuer, &resource, "ada", "run");
    let with = |key: &str, value: Value| {
        let mut c = good.clone();
        c[key] = value;
        c
    };
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(good.to_string())
    );
    let cases = [
        (
            ed.sign("ed-1", &with("aud", json!("http://elsewhere.example/mcp"))),
            "not meant for this server",
        ),
        (
            ed.sign("ed-1", &with("iss", json!("http://evil.example"))),
            "not by the configured authorization server",
        ),
        (ed.sign("ed-1", &with("exp", json!(1_000))), "expired"),
        (stranger.sign("ed-1", &good), "signature does not match"),
        (ed.sign("ed-9", &good), "has no key"),
        (unsigned, "signed with"),
        ("not-a-token".to_owned(), "not a JWT"),
    ];
    for (token, why) in cases {
        let answer = post_mcp(&server, Some(&token), None, initialize()).await;
        assert_eq!(answer.status, 401, "{why}: {}", answer.text);
        let challenge = answer.header("www-authenticate").unwrap();
        assert_eq!(
            param(challenge, "error"),
            Some("invalid_token"),
            "{challenge}"
        );
        let described = param(challenge, "error_description").unwrap();
        assert!(described.contains(why), "{why}: {described}");
        assert!(
            answer.json["detail"].as_str().unwrap().contains(why),
            "{}",
            answer.text
        );
    }
    // A valid token without the `run` scope: 403, naming the scope to ask for.
    let reader = ed.sign("ed-1", &with("scope", json!("read")));
    let answer = post_mcp(&server, Some(&reader), None, initialize()).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    let challenge = answer.header("www-authenticate").unwrap();
    assert_eq!(param(challenge, "error"), Some("insufficient_scope"));
    assert_eq!(param(challenge, "scope"), Some("run"));
    // A wrong toolhost token gets the challenge too.
    let answer = post_mcp(&server, Some("thk_000000000000_00"), None, initialize()).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        param(answer.header("www-authenticate").unwrap(), "error"),
        Some("invalid_token")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_the_server_rotates_in_are_fetched_again() {
    let (old, new) = (Signer::ed25519(), Signer::p256());
    let keys = KeyServer::start(vec![old.jwk("old")]).await;
    let (server, resource) = server_for(&keys.issuer, |s| {
        s.refresh_floor = Duration::ZERO;
    })
    .await;
    let first = old.sign("old", &claims(&keys.issuer, &resource, "ada", "run"));
    assert_eq!(
        post_mcp(&server, Some(&first), None, initialize())
            .await
            .status,
        200
    );
    assert_eq!(keys.fetched.load(Ordering::SeqCst), 1);
    // The server rotates: the new key is published, the old one withdrawn.
    *keys.keys.lock().unwrap() = vec![new.jwk("new")];
    let second = new.sign("new", &claims(&keys.issuer, &resource, "ada", "run"));
    let answer = post_mcp(&server, Some(&second), None, initialize()).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(keys.fetched.load(Ordering::SeqCst), 2);
    // The old key is gone with the set it was in.
    let answer = post_mcp(&server, Some(&first), None, initialize()).await;
    assert_eq!(answer.status, 401, "{}", answer.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_of_unknown_keys_are_limited_by_the_refresh_floor() {
    let signer = Signer::ed25519();
    let keys = KeyServer::start(vec![signer.jwk("k")]).await;
    let (server, resource) = server_for(&keys.issuer, |_| {}).await;
    let good = signer.sign("k", &claims(&keys.issuer, &resource, "ada", "run"));
    assert_eq!(
        post_mcp(&server, Some(&good), None, initialize())
            .await
            .status,
        200
    );
    // Tokens naming keys nobody has cannot make the server fetch again and again.
    for i in 0..5 {
        let forged = signer.sign(
            &format!("k{i}"),
            &claims(&keys.issuer, &resource, "ada", "run"),
        );
        assert_eq!(
            post_mcp(&server, Some(&forged), None, initialize())
                .await
                .status,
            401
        );
    }
    assert_eq!(keys.fetched.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_authorization_server_is_answered_unavailable() {
    // A port that was just free: nothing answers there.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (server, resource) = server_for(&issuer, |_| {}).await;
    let token = Signer::ed25519().sign("k", &claims(&issuer, &resource, "ada", "run"));
    let answer = post_mcp(&server, Some(&token), None, initialize()).await;
    assert_eq!(answer.status, 503, "{}", answer.text);
    let detail = answer.json["detail"].as_str().unwrap();
    assert!(detail.contains("keys could not be fetched"), "{detail}");
    assert!(
        detail.contains(&format!("{issuer}/.well-known/oauth-authorization-server")),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_belongs_to_the_token_that_opened_it() {
    let signer = Signer::ed25519();
    let keys = KeyServer::start(vec![signer.jwk("k")]).await;
    let (server, resource) = server_for(&keys.issuer, |_| {}).await;
    let ada = signer.sign("k", &claims(&keys.issuer, &resource, "ada", "run"));
    let bob = signer.sign("k", &claims(&keys.issuer, &resource, "bob", "run"));
    let opened = post_mcp(&server, Some(&ada), None, initialize()).await;
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let list = || {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            .to_string()
            .into_bytes()
    };
    let stolen = post_mcp(&server, Some(&bob), Some(&session), list()).await;
    assert_eq!(stolen.status, 404, "{}", stolen.text);
    // The same person through another client is another caller.
    let mut other_app = claims(&keys.issuer, &resource, "ada", "run");
    other_app["client_id"] = json!("other-app");
    let other_app = signer.sign("k", &other_app);
    let borrowed = post_mcp(&server, Some(&other_app), Some(&session), list()).await;
    assert_eq!(borrowed.status, 404, "{}", borrowed.text);
    let own = server.token(&[Scope::Run], None);
    assert_eq!(
        post_mcp(&server, Some(&own), Some(&session), list())
            .await
            .status,
        404
    );
    assert_eq!(
        post_mcp(&server, Some(&ada), Some(&session), list())
            .await
            .status,
        200
    );
    // Closed by its owner, the session is no one's.
    let mut headers = HEADERS.to_vec();
    headers.push(("mcp-session-id", &session));
    let closed = server
        .raw("DELETE", "/mcp", Some(&ada), &headers, Vec::new())
        .await;
    assert!(closed.status < 300, "{}", closed.text);
    assert_eq!(
        post_mcp(&server, Some(&ada), Some(&session), list())
            .await
            .status,
        404
    );
}

/// A real authorization server (oidc-provider from npm, RS256 JWT access tokens for the
/// resource a client names) and the Python SDK's OAuth client, which starts from the 401 alone.
/// `./scripts/test` installs both; without them this fails and says so, it never skips.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_gets_a_token_from_a_real_authorization_server_on_its_own() {
    let node = std::env::var("TOOLHOST_TEST_NODE22")
        .expect("TOOLHOST_TEST_NODE22 names no Node 22: run the tests with ./scripts/test");
    let provider = std::env::var("TOOLHOST_TEST_OIDC_PROVIDER").expect(
        "TOOLHOST_TEST_OIDC_PROVIDER names no oidc-provider: run the tests with ./scripts/test",
    );
    let (client_id, client_secret) = ("toolhost-test", "a-client-secret-only-the-test-knows");
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/oauth/authorization_server.mjs");
    let mut child = tokio::process::Command::new(node)
        .arg(script)
        .args([&provider, client_id, client_secret])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the authorization server did not start within 30 s")
        .unwrap()
        .expect("the authorization server ended before it listened");
    let started: Value = serde_json::from_str(&first).unwrap();
    let issuer = started["issuer"].as_str().unwrap().to_owned();
    let (server, resource) = server_for(&issuer, |_| {}).await;
    let seen = python_client(
        "http_client_oauth.py",
        &[&resource, &issuer, client_id, client_secret],
    )
    .await;
    assert_eq!(seen["good"]["isError"], false, "{seen}");
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("get_weather")),
        "{seen}"
    );
    assert_eq!(seen["scope"], "run", "{seen}");
    // The call is journaled on a thread like any other.
    let threads = server.store.threads(None).unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
}

/// The login of an MCP server through this server: an admin starts it; the callback page does
/// nothing for an answer to no login it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_through_the_server_needs_an_admin_and_a_callback_needs_its_login() {
    let server = TestServer::start_with(&example(), |_| {}).await;
    let reader = server.token(&[Scope::Read], None);
    let answer = server
        .raw(
            "POST",
            "/v1/mcp/servers/docs/login",
            Some(&reader),
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    let admin = server.admin();
    let answer = server
        .raw(
            "POST",
            "/v1/mcp/servers/docs/login",
            Some(&admin),
            &[],
            Vec::new(),
        )
        .await;
    let detail = answer.problem(404);
    assert!(detail.contains("no MCP server \"docs\""), "{detail}");
    let stray = server
        .get("/mcp/oauth/callback?state=made-up&code=stolen", None)
        .await;
    assert_eq!(stray.status, 400, "{}", stray.text);
    assert!(
        stray.content_type.starts_with("text/html"),
        "{}",
        stray.content_type
    );
    assert!(
        stray.text.contains("no login toolhost is waiting for"),
        "{}",
        stray.text
    );
}
