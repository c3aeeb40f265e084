//! The web page's files over HTTP: served without a token, with their content types and a
//! content security policy that lets only the page's own script run; no other path under `/ui/`
//! exists. The agents list gives the page what its start form asks for.

mod common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_page_and_its_files_are_served_without_a_token_under_a_strict_policy() {
    let server = TestServer::start().await;
    let page = server.get("/", None).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    assert!(page
        .text
        .contains("<script type=\"module\" src=\"/ui/app.js\">"));
    for (path, content_type) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/api.js", "text/javascript; charset=utf-8"),
        ("/ui/dom.js", "text/javascript; charset=utf-8"),
        ("/ui/thread.js", "text/javascript; charset=utf-8"),
        ("/ui/transcript.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
    ] {
        let file = server.get(path, None).await;
        assert_eq!(file.status, 200, "{path}");
        assert_eq!(file.content_type, content_type, "{path}");
    }
    // Every module the page imports is one the server has.
    for module in ["./api.js", "./dom.js", "./thread.js", "./transcript.js"] {
        let importers = ["/ui/app.js", "/ui/thread.js", "/ui/transcript.js"];
        let mut found = false;
        for importer in importers {
            found |= server.get(importer, None).await.text.contains(module);
        }
        assert!(found, "{module} is imported by no file");
    }
}

#[tokio::test]
async fn the_page_carries_a_policy_that_runs_only_its_own_script() {
    let server = TestServer::start().await;
    let headers = fetch_headers(&server, "/").await;
    let policy = headers
        .iter()
        .find(|(n, _)| n == "content-security-policy")
        .map(|(_, v)| v.clone())
        .expect("no content security policy");
    assert!(policy.contains("default-src 'none'"), "{policy}");
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert!(headers.contains(&("x-content-type-options".into(), "nosniff".into())));
    assert!(headers.contains(&("x-frame-options".into(), "DENY".into())));
}

#[tokio::test]
async fn no_other_path_under_ui_is_served() {
    let server = TestServer::start().await;
    for path in [
        "/ui/",
        "/ui/nope.js",
        "/ui/../README.md",
        "/ui/%2e%2e/Cargo.toml",
        "/ui/app.js/x",
    ] {
        let answer = server.get(path, None).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
        assert_eq!(answer.content_type, "application/problem+json", "{path}");
    }
    // The page is read-only.
    let answer = server.post("/", None, &json!({})).await;
    assert_eq!(answer.status, 405);
}

#[tokio::test]
async fn agents_say_which_variables_a_new_thread_may_be_given() {
    let server = TestServer::start().await;
    let token = server.admin();
    let agents = server.get("/v1/agents", Some(&token)).await.json;
    let cashier = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "cashier")
        .unwrap();
    // SHOP_CITY has a value in the prompt's definition; the payment key is asked for when the
    // tool needs it, and it is a secret.
    assert_eq!(
        cashier["variables"],
        json!([{"name": "PAYMENT_API_KEY", "secret": true, "required_at_start": false,
                "description": "Key of the payment service"}])
    );
}

/// The names and values of an answer's headers.
async fn fetch_headers(server: &TestServer, path: &str) -> Vec<(String, String)> {
    use http_body_util::Full;
    use hyper_util::rt::TokioIo;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .uri(path)
        .header("host", server.addr.to_string())
        .body(Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect()
}
