use super::discovery::{chosen_scope, covers, parse_challenge, split_url, Challenge, Discovered};
use super::token::{auth_method, authorization_url, decode, encode, Pkce};
use super::Client;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

#[test]
fn a_bearer_challenge_is_read_with_quotes_escapes_and_bare_values() {
    let c = parse_challenge(
        r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", error_description="say \"please\"""#,
    );
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("https://a.example/.well-known/oauth-protected-resource/mcp")
    );
    let bare = parse_challenge("bearer realm=x, scope=read");
    assert_eq!(bare.scope.as_deref(), Some("read"));
    assert_eq!(parse_challenge("Basic realm=\"x\""), Challenge::default());
}

#[test]
fn a_resource_covers_its_own_url_and_those_below_it_only() {
    assert!(covers("https://a.example/mcp", "https://a.example/mcp"));
    assert!(covers("https://a.example", "https://a.example/mcp"));
    assert!(covers("https://a.example/", "https://a.example/mcp"));
    assert!(covers("https://a.example/api", "https://a.example/api/mcp"));
    assert!(!covers("https://a.example/mc", "https://a.example/mcp"));
    assert!(!covers("https://b.example/mcp", "https://a.example/mcp"));
    assert!(!covers("https://a.example/mcp/x", "https://a.example/mcp"));
    assert_eq!(
        split_url("https://a.example:8/x/y/?q#f"),
        ("https://a.example:8", "/x/y")
    );
}

fn found(scopes: &[&str]) -> Discovered {
    Discovered {
        iss_in_answers: false,
        metadata_issuer: None,
        resource: "https://a.example/mcp".into(),
        resource_scopes: scopes.iter().map(|s| s.to_string()).collect(),
        issuer: "https://as.example".into(),
        authorization_endpoint: Some("https://as.example/authorize?tenant=1".into()),
        token_endpoint: "https://as.example/token".into(),
        registration_endpoint: None,
        auth_methods: vec![],
        client_id_documents: false,
        pkce_methods: Some(vec!["S256".into()]),
    }
}

#[test]
fn the_scope_is_the_files_else_the_challenges_else_the_resources() {
    let challenge = Challenge {
        scope: Some("from:challenge".into()),
        ..Challenge::default()
    };
    let f = found(&["a", "b"]);
    assert_eq!(
        chosen_scope(Some("mine"), &challenge, &f).as_deref(),
        Some("mine")
    );
    assert_eq!(
        chosen_scope(None, &challenge, &f).as_deref(),
        Some("from:challenge")
    );
    assert_eq!(
        chosen_scope(None, &Challenge::default(), &f).as_deref(),
        Some("a b")
    );
    assert_eq!(chosen_scope(None, &Challenge::default(), &found(&[])), None);
}

#[test]
fn a_secret_goes_by_basic_unless_the_server_takes_only_the_form() {
    assert_eq!(auth_method(&[], true), "client_secret_basic");
    assert_eq!(
        auth_method(&["client_secret_post".into()], true),
        "client_secret_post"
    );
    assert_eq!(
        auth_method(
            &["client_secret_post".into(), "client_secret_basic".into()],
            true
        ),
        "client_secret_basic"
    );
    assert_eq!(auth_method(&["client_secret_basic".into()], false), "none");
}

#[test]
fn the_authorization_url_carries_pkce_state_and_the_resource() {
    let pkce = Pkce::new().unwrap();
    // S256: the challenge is the verifier's SHA-256, base64url without padding.
    assert_eq!(
        pkce.challenge,
        URL_SAFE_NO_PAD.encode(Sha256::digest(pkce.verifier.as_bytes()))
    );
    assert!(pkce.verifier.len() >= 43);
    let client = Client {
        id: "https://app.example/client.json".into(),
        secret: None,
        auth_method: "none".into(),
        private_key: None,
    };
    let url = authorization_url(
        &found(&[]),
        &client,
        "http://127.0.0.1:5/callback",
        &pkce,
        "st",
        Some("a b"),
    )
    .unwrap();
    assert!(
        url.starts_with("https://as.example/authorize?tenant=1&response_type=code&"),
        "{url}"
    );
    for part in [
        "client_id=https%3A%2F%2Fapp.example%2Fclient.json",
        "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback",
        "code_challenge_method=S256",
        "state=st",
        "resource=https%3A%2F%2Fa.example%2Fmcp",
        "scope=a%20b",
    ] {
        assert!(url.contains(part), "{part} in {url}");
    }
}

#[test]
fn query_values_decode_as_they_were_encoded() {
    for text in ["plain", "a b+c", "é/?&=%", "%zz%4"] {
        assert_eq!(decode(&encode(text)), text);
    }
    assert_eq!(decode("a+b%20c%zz%4"), "a b c%zz%4");
}

#[test]
fn a_lifetime_is_read_as_seconds_and_bounded() {
    use super::token::expires_at;
    use serde_json::json;
    let now = super::now_ms();
    let in_an_hour = expires_at(&json!(3600)).unwrap();
    assert!((in_an_hour - now - 3_600_000).abs() < 5_000);
    let as_text = expires_at(&json!("3600")).unwrap();
    assert!((as_text - in_an_hour).abs() < 5_000);
    // A hostile lifetime neither overflows nor lasts forever.
    let huge = expires_at(&json!(i64::MAX)).unwrap();
    assert!(huge - now <= 10 * 365 * 24 * 3600 * 1000 + 5_000);
    assert!(expires_at(&json!(-5)).unwrap() <= super::now_ms());
    assert_eq!(expires_at(&json!(null)), None);
}
