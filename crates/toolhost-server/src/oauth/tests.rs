use super::*;
use toolhost_providers::fetch::{FetchError, FetchFuture};

struct NoNetwork;

impl Fetcher for NoNetwork {
    fn fetch(&self, request: FetchRequest) -> FetchFuture<'_> {
        Box::pin(async move {
            Err(FetchError::Connection(format!(
                "no network for {}",
                request.url
            )))
        })
    }
}

fn settings(resource: &str) -> OAuthSettings {
    OAuthSettings::new("https://as.example/tenant", resource, Arc::new(NoNetwork))
}

#[test]
fn the_metadata_is_found_under_the_resource_path() {
    let s = settings("https://tools.example/mcp");
    assert_eq!(
        s.metadata_url(),
        "https://tools.example/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        s.metadata_paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    let root = settings("https://tools.example:8443/");
    assert_eq!(
        root.metadata_url(),
        "https://tools.example:8443/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        root.metadata()["authorization_servers"][0],
        "https://as.example/tenant"
    );
}

#[test]
fn urls_must_be_https_but_to_this_machine() {
    assert!(settings("https://tools.example/mcp").check().is_ok());
    assert!(settings("http://127.0.0.1:7878/mcp").check().is_ok());
    assert!(settings("http://localhost/mcp").check().is_ok());
    let e = settings("http://tools.example/mcp")
        .check()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("oauth.resource (http://tools.example/mcp) must be an https URL"),
        "{e}"
    );
    assert!(settings("https://tools.example/mcp#x").check().is_err());
    assert!(settings("ftp://tools.example/mcp").check().is_err());
    assert!(settings("https:///mcp").check().is_err());
    let mut s = settings("https://tools.example/mcp");
    s.issuer = "https://as.example?tenant=1".to_owned();
    assert_eq!(s.check(), Err(OAuthSettingsError::IssuerQuery));
    s.issuer = "https://as.example".to_owned();
    s.jwks_uri = Some("http://keys.example/jwks".to_owned());
    assert!(s
        .check()
        .unwrap_err()
        .to_string()
        .starts_with("oauth.jwks_uri"));
}

#[test]
fn scopes_are_read_behind_the_prefix() {
    let mut s = settings("https://tools.example/mcp");
    s.scope_prefix = "toolhost:".to_owned();
    let grant = Grant {
        subject: "sub:ada".to_owned(),
        client: None,
        scopes: vec!["toolhost:run".into(), "run".into(), "toolhost:nope".into()],
        expires_at: 0,
    };
    assert_eq!(s.scopes_of(&grant), [crate::auth::Scope::Run]);
    assert_eq!(s.metadata()["scopes_supported"][0], "toolhost:run");
}

#[test]
fn a_challenge_names_the_metadata_and_never_breaks_its_quotes() {
    let s = settings("https://tools.example/mcp");
    let problem = crate::Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", "a \"bad\" token");
    let response = challenge(&s, problem, Some("invalid_token"));
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let value = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert_eq!(
        value,
        "Bearer resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\", \
         error=\"invalid_token\", error_description=\"a 'bad' token\""
    );
}

#[tokio::test]
async fn without_reachable_keys_a_token_is_answered_unavailable() {
    let verifier = Verifier::new(settings("https://tools.example/mcp"));
    let header = r#"{"alg":"ES256","kid":"k","typ":"at+jwt"}"#;
    let token = format!(
        "{}.e30.c2ln",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header)
    );
    use base64::Engine;
    match verifier.check(&token).await {
        Err(Refusal::Unavailable(why)) => {
            assert!(why.contains("no network for https://as.example/.well-known/oauth-authorization-server/tenant"), "{why}");
            assert!(
                why.contains("https://as.example/tenant/.well-known/openid-configuration"),
                "{why}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn clocks_may_not_be_said_to_differ_by_more_than_five_minutes() {
    let mut s = settings("https://tools.example/mcp");
    s.leeway = Duration::from_secs(301);
    assert_eq!(s.check(), Err(OAuthSettingsError::Leeway { max_s: 300 }));
    assert!(s.check().unwrap_err().to_string().contains("at most 300 s"));
}

#[test]
fn a_description_a_header_cannot_hold_leaves_the_challenge_whole() {
    let s = settings("https://tools.example/mcp");
    let problem = crate::Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", "key \u{1}\n");
    let response = challenge(&s, problem, Some("invalid_token"));
    let value = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert_eq!(
        value,
        "Bearer resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\""
    );
}

#[tokio::test]
async fn a_failed_fetch_of_the_keys_is_not_tried_again_before_the_floor() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    struct Counting(AtomicUsize);
    impl Fetcher for Counting {
        fn fetch(&self, request: FetchRequest) -> FetchFuture<'_> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { Err(FetchError::Connection(format!("down: {}", request.url))) })
        }
    }
    let counting = Arc::new(Counting(AtomicUsize::new(0)));
    let mut s = OAuthSettings::new(
        "https://as.example",
        "https://tools.example/mcp",
        counting.clone(),
    );
    s.jwks_uri = Some("https://as.example/jwks".to_owned());
    let verifier = Verifier::new(s);
    let header = r#"{"alg":"ES256","kid":"k","typ":"at+jwt"}"#;
    use base64::Engine;
    let token = format!(
        "{}.e30.c2ln",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header)
    );
    for _ in 0..5 {
        assert!(matches!(
            verifier.check(&token).await,
            Err(Refusal::Unavailable(_))
        ));
    }
    assert_eq!(counting.0.load(Ordering::SeqCst), 1);
}
