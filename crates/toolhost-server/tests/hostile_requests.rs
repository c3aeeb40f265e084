//! Hostile requests get a clear 4xx problem and change nothing stored: oversized, deeply nested,
//! wrong types, unknown fields, invalid UTF-8, no JSON content type, trailing bytes, odd paths.

mod common;

use common::*;
use serde_json::json;

fn json_headers() -> Vec<(&'static str, &'static str)> {
    vec![("content-type", "application/json")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_refused_with_what_and_where_and_nothing_is_stored() {
    let server = TestServer::start().await;
    let token = server.admin();
    let post = |body: Vec<u8>, headers: Vec<(&'static str, &'static str)>| {
        let server = &server;
        let token = token.clone();
        async move {
            server
                .raw("POST", "/v1/threads", Some(&token), &headers, body)
                .await
        }
    };

    let huge = json!({"agent": "assistant", "message": "x".repeat(100 * 1024)});
    let detail = post(huge.to_string().into_bytes(), json_headers())
        .await
        .problem(413);
    assert!(
        detail.contains("larger than this server accepts"),
        "{detail}"
    );

    let array = post(br#"["assistant", "hi"]"#.to_vec(), json_headers()).await;
    assert_eq!(array.problem(422), "the body must be a JSON object");
    let nothing = post(Vec::new(), json_headers()).await;
    assert!(nothing.problem(400).contains("the body is empty"));

    let wrong = post(
        json!({"agent": "assistant", "message": 42})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    let detail = wrong.problem(422);
    assert!(detail.contains("expected a string"), "{detail}");
    assert_eq!(wrong.json["pointer"], "/message");

    let unknown = post(
        json!({"agent": "assistant", "message": "hi", "priority": "high"})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    assert!(unknown.problem(422).contains("unknown field `priority`"));

    let mut invalid_utf8 = br#"{"agent": "assistant", "message": "caf"#.to_vec();
    invalid_utf8.extend_from_slice(&[0xC3, 0x28]);
    invalid_utf8.extend_from_slice(br#""}"#);
    let detail = post(invalid_utf8, json_headers()).await.problem(400);
    assert!(detail.contains("not valid JSON"), "{detail}");

    let plain = post(
        json!({"agent": "assistant", "message": "hi"})
            .to_string()
            .into_bytes(),
        vec![("content-type", "text/plain")],
    )
    .await;
    assert!(plain.problem(415).contains("`text/plain`"));

    let trailing = post(
        br#"{"agent": "assistant", "message": "hi"} {"again": 1}"#.to_vec(),
        json_headers(),
    )
    .await;
    assert!(trailing.problem(400).contains("more after its JSON value"));

    let empty = post(
        json!({"agent": "assistant", "message": "   "})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    assert_eq!(empty.problem(422), "the first message is empty");
    assert_eq!(empty.json["pointer"], "/message");

    let nobody = post(
        json!({"agent": "nobody", "message": "hi"})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    assert!(nobody.problem(422).contains("no agent named \"nobody\""));
    assert_eq!(nobody.json["pointer"], "/agent");

    let both = post(
        json!({"agent": "cashier", "message": "hi", "variables": {"K": "a"}, "secrets": {"K": "b"}})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    assert!(both
        .problem(422)
        .contains("both as a variable and as a secret"));

    let secret_as_text = post(
        json!({"agent": "cashier", "message": "hi", "variables": {"PAYMENT_API_KEY": "k"}})
            .to_string()
            .into_bytes(),
        json_headers(),
    )
    .await;
    assert!(secret_as_text.problem(422).contains("is a secret"));
    assert_eq!(secret_as_text.json["pointer"], "/variables/PAYMENT_API_KEY");

    assert_eq!(
        server.store.threads(None).unwrap(),
        vec![],
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_paths_and_ids_are_not_found_and_never_escape() {
    let server = TestServer::start().await;
    let token = server.admin();
    for path in [
        "/v1/threads/..%2F..%2Fetc%2Fpasswd",
        "/v1/threads/../threads",
        "/v1/threads/%00/messages",
        "/v1/threads/nope/variables/..",
    ] {
        let answer = server.get(path, Some(&token)).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
        assert_eq!(answer.content_type, "application/problem+json", "{path}");
    }
    // Nesting deep enough to exhaust a recursive parser, where a body takes any JSON value.
    let nested = format!(
        r#"{{"decision": "approve", "arguments": {}{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let deep = server
        .raw(
            "POST",
            "/v1/threads/nope/approvals/call",
            Some(&token),
            &[("content-type", "application/json")],
            nested.into_bytes(),
        )
        .await;
    let detail = deep.problem(400);
    assert!(detail.contains("recursion limit"), "{detail}");
    assert!(deep.json["pointer"]
        .as_str()
        .unwrap()
        .starts_with("/arguments/0/0/0"));
    let decided = server
        .post(
            "/v1/threads/nope/approvals/call",
            Some(&token),
            &json!({"decision": "maybe"}),
        )
        .await;
    let detail = decided.problem(422);
    assert!(detail.contains("unknown variant `maybe`"), "{detail}");
    assert_eq!(decided.json["pointer"], "/decision");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_or_an_undecodable_path_is_a_problem_too() {
    let server = TestServer::start().await;
    let token = server.admin();
    let wrong = server
        .raw("PUT", "/v1/agents", Some(&token), &[], Vec::new())
        .await;
    let detail = wrong.problem(405);
    assert!(detail.contains("/v1/agents does not take PUT"), "{detail}");
    let undecodable = server.get("/v1/threads/%FF", Some(&token)).await;
    assert_eq!(undecodable.status, 400, "{}", undecodable.text);
    undecodable.problem(400);
    let lower = server.get("/v1/agents", None).await;
    lower.problem(401);
    let lower_scheme = server
        .raw(
            "GET",
            "/v1/agents",
            None,
            &[("authorization", &format!("bearer {token}"))],
            Vec::new(),
        )
        .await;
    assert_eq!(
        lower_scheme.status, 200,
        "the scheme's name is case-insensitive"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_the_scope_is_refused_before_its_body_is_looked_at() {
    let server = TestServer::start().await;
    let reader = server.token(&[toolhost_server::auth::Scope::Read], None);
    let thread_id = "t-none";
    let routes = [
        "/v1/threads".to_owned(),
        format!("/v1/threads/{thread_id}/messages"),
        format!("/v1/threads/{thread_id}/approvals/c1"),
        format!("/v1/threads/{thread_id}/variables/r1"),
        "/v1/tools/get_weather/call".to_owned(),
    ];
    for path in routes {
        for (content_type, body) in [
            ("text/plain", b"hello".to_vec()),
            ("application/json", b"{not json".to_vec()),
        ] {
            let answer = server
                .raw(
                    "POST",
                    &path,
                    Some(&reader),
                    &[("content-type", content_type)],
                    body,
                )
                .await;
            assert_eq!(answer.status, 403, "{path} {content_type}: {}", answer.text);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variables_no_definition_declares_are_refused_and_nothing_is_stored() {
    let server = TestServer::start().await;
    let token = server.admin();
    let before = server.store.thread_page(&every_thread()).unwrap().len();
    let long = "N".repeat(10_000);
    for given in [
        json!({"agent": "cashier", "message": "hi", "variables": {"TYPO": "a"}}),
        json!({"agent": "cashier", "message": "hi", "secrets": {"TYPO": "a"}}),
        json!({"agent": "cashier", "message": "hi", "variables": {long.clone(): "a"}}),
    ] {
        let refused = server
            .raw(
                "POST",
                "/v1/threads",
                Some(&token),
                &json_headers(),
                given.to_string().into_bytes(),
            )
            .await;
        let detail = refused.problem(422);
        assert!(detail.contains("declares"), "{detail}");
        assert!(
            detail.len() < 2_000,
            "the detail stays readable: {}",
            detail.len()
        );
    }
    // A direct call's variables are refused the same way.
    let call = server
        .raw(
            "POST",
            "/v1/tools/get_current_time/call",
            Some(&token),
            &json_headers(),
            json!({"arguments": {}, "secrets": {"TYPO": "a"}})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert!(call.problem(422).contains("declares"));
    assert_eq!(
        server.store.thread_page(&every_thread()).unwrap().len(),
        before
    );
}

fn every_thread() -> toolhost_store::ThreadQuery {
    toolhost_store::ThreadQuery {
        agents: None,
        status: None,
        parent: None,
        after: None,
        limit: 10_000,
    }
}
