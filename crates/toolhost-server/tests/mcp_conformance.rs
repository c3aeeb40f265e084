//! The MCP project's conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `scripts/test-node/`) against `/mcp` of a real server on loopback, serving the example
//! project `examples/mcp-conformance` (the fixture tools the scenarios call).
//!
//! The suite's client sends no token and `/mcp` takes none, so the test puts a loopback proxy in
//! front that adds one, as any client configured with a bearer token would; it passes every
//! other header on, so the suite's foreign `Host` and `Origin` still reach the server.
//!
//! Run: the scenarios about what toolhost serves (lifecycle, ping, tools, logging, streams, DNS
//! rebinding, the example's own prompts, resources and completion, tools that ask the client
//! through elicitation, sampling and roots, in requests under 2025-11-25 and `input_required`
//! results under 2026-07-28, caching hints and header-marked arguments). Not run: what the
//! README lists, which needs what toolhost does not offer. Every check
//! of a run scenario must succeed, and the journal must hold each fixture's call (a scenario
//! that only looks for text would pass on "tool not found").

mod common;
mod conformance;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use common::*;
use conformance::{checks_in, failures, installed, printed};
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use toolhost_server::auth::Scope;
use toolhost_store::CallState;

/// The tool scenarios, the same in both suites.
const TOOL_SCENARIOS: [&str; 9] = [
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
];

/// The scenarios of the project's prompts and resources (`agents/mcp-prompts/`,
/// `agents/mcp-resources/`), the same in both suites.
const CATALOG_SCENARIOS: [&str; 10] = [
    "completion-complete",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
];

/// The scenarios of the 2025-11-25 suite that concern what toolhost serves.
fn scenarios_2025() -> Vec<&'static str> {
    [
        &["server-initialize", "ping", "logging-set-level"][..],
        &TOOL_SCENARIOS,
        &CATALOG_SCENARIOS,
        &[
            "resources-subscribe",
            "resources-unsubscribe",
            "tools-call-elicitation",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
            "tools-call-sampling",
            "tools-call-with-logging",
            "json-schema-2020-12",
            "dns-rebinding-protection",
        ],
    ]
    .concat()
}

/// The scenarios of the 2026-07-28 suite (stateless) that concern what toolhost serves, but
/// `server-stateless` (run on a project of its own, which its tools change).
fn scenarios_2026() -> Vec<&'static str> {
    [
        &TOOL_SCENARIOS[..],
        &CATALOG_SCENARIOS,
        &[
            "dns-rebinding-protection",
            "http-header-validation",
            "sep-2164-resource-not-found",
            "caching",
            "http-custom-header-server-validation",
            "input-required-result-basic-elicitation",
            "input-required-result-basic-sampling",
            "input-required-result-basic-list-roots",
            "input-required-result-request-state",
            "input-required-result-multiple-input-requests",
            "input-required-result-multi-round",
            "input-required-result-missing-input-response",
            "input-required-result-result-type",
            "input-required-result-unsupported-methods",
            "input-required-result-tampered-state",
            "input-required-result-capability-check",
            "input-required-result-ignore-extra-params",
            "input-required-result-validate-input",
            "input-required-result-non-tool-request",
            "json-schema-2020-12",
        ],
    ]
    .concat()
}

/// Forwards every request to `target` with the bearer `token` added.
async fn forward(
    State((target, token)): State<(SocketAddr, String)>,
    mut request: Request,
) -> Response {
    let stream = match tokio::net::TcpStream::connect(target).await {
        Ok(s) => s,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(io).await {
        Ok(pair) => pair,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    tokio::spawn(connection);
    let bearer = format!("Bearer {token}").parse().unwrap();
    request
        .headers_mut()
        .insert(axum::http::header::AUTHORIZATION, bearer);
    match sender.send_request(request).await {
        Ok(answer) => answer.map(axum::body::Body::new),
        Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// Serves the proxy on a loopback port; its address.
async fn proxy(target: SocketAddr, token: String) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(forward)
        .with_state((target, token));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Runs one scenario of the suite at `suite` against `url`: its checks, or what failed in it.
async fn scenario(suite: &str, version: &str, url: &str, name: &str) -> Result<Vec<Value>, String> {
    let out = temp_dir();
    // Killed when the wait is given up (the future dropped).
    let ran = within(
        &format!("the end of the conformance scenario {name}"),
        tokio::process::Command::new(installed("TOOLHOST_TEST_NODE22"))
            .arg(suite)
            .args(["server", "--url", url, "--scenario", name])
            .args(["--spec-version", version, "-o"])
            .arg(&out)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let printed = printed(&ran);
    let checks = checks_in(&out);
    let _ = std::fs::remove_dir_all(&out);
    if checks.is_empty() {
        return Err(format!("scenario {name} saved no checks:\n{printed}"));
    }
    let failed = failures(name, &checks);
    if !failed.is_empty() {
        return Err(failed.join("\n"));
    }
    if !ran.status.success() {
        return Err(format!("scenario {name} failed:\n{printed}"));
    }
    Ok(checks)
}

/// The tools whose calls completed on any thread of the server.
fn completed_calls(server: &TestServer) -> BTreeSet<String> {
    let mut tools = BTreeSet::new();
    for thread in server.store.threads(None).unwrap() {
        for call in server.store.calls(&thread.id).unwrap() {
            if call.state == CallState::Completed {
                tools.insert(call.tool);
            }
        }
    }
    tools
}

/// Runs `scenarios` of the suite named by `var` at protocol `version` against a new server;
/// the server, once they all passed.
async fn conformance(var: &str, version: &str, scenarios: &[&str]) -> TestServer {
    let server = TestServer::start_with(&mcp_example(), |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    run_scenarios(server, var, version, scenarios).await.0
}

/// Runs `scenarios` of the suite named by `var` at protocol `version` against `server`; the
/// server and every check made, once they all passed.
async fn run_scenarios(
    server: TestServer,
    var: &str,
    version: &str,
    scenarios: &[&str],
) -> (TestServer, Vec<Value>) {
    let suite = installed(var);
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let url = format!("http://{}/mcp", proxy(server.addr, token).await);
    let (mut failed, mut checks) = (Vec::new(), Vec::new());
    for name in scenarios {
        match scenario(&suite, version, &url, name).await {
            Ok(made) => checks.extend(made),
            Err(why) => failed.push(why),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    (server, checks)
}

/// Whether check `id` is among `checks`, every time with SUCCESS (INFO passes a scenario, but
/// some scenarios say INFO when they could not exercise what they test).
fn succeeded(checks: &[Value], id: &str) -> bool {
    let made: Vec<&Value> = checks.iter().filter(|c| c["id"] == id).collect();
    !made.is_empty() && made.iter().all(|c| c["status"] == "SUCCESS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_of_2025_11_25_passes_every_scenario_of_what_toolhost_serves() {
    let server = conformance(
        "TOOLHOST_TEST_CONFORMANCE_2025",
        "2025-11-25",
        &scenarios_2025(),
    )
    .await;
    let called = completed_calls(&server);
    for tool in [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_error_handling",
        "test_tool_with_progress",
        "test_tool_with_logging",
        "test_template_data",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "test_sampling",
    ] {
        assert!(called.contains(tool), "{tool} never ran: {called:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_of_2026_07_28_passes_every_scenario_of_what_toolhost_serves() {
    let server = conformance(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "2026-07-28",
        &scenarios_2026(),
    )
    .await;
    let called = completed_calls(&server);
    for tool in [
        "test_simple_text",
        "test_image_content",
        "test_tool_with_progress",
        "test_template_data",
        "test_prompt_context",
    ] {
        assert!(called.contains(tool), "{tool} never ran: {called:?}");
    }
}

/// `server-stateless` changes the tool and prompt lists (its diagnostic tools rewrite a
/// definition in the project's files) and watches for the announcements on `subscriptions/listen`
/// streams: run on a copy of the example, loaded again when its files change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_07_28_stateless_scenario_passes_on_a_project_whose_files_change() {
    let project = mcp_example_copy();
    let server = TestServer::start_watching(&project, |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let (server, checks) = run_scenarios(
        server,
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "2026-07-28",
        &["server-stateless"],
    )
    .await;
    for id in [
        "sep-2575-server-rejects-undeclared-capability",
        "sep-2575-missing-capability-http-400",
        "sep-2575-server-sends-tools-list-changed-on-subscription",
        "sep-2575-server-sends-prompts-list-changed-on-subscription",
    ] {
        assert!(succeeded(&checks, id), "{id}: {checks:?}");
    }
    let called = completed_calls(&server);
    for tool in [
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
    ] {
        assert!(called.contains(tool), "{tool} never ran: {called:?}");
    }
    // Each trigger rewrote its definition: the suite calls the tool trigger three times and
    // the prompt trigger once.
    let read = |path: &str| std::fs::read_to_string(project.join(path)).unwrap();
    assert!(read("agents/tools/test_changing_tool.json").contains("Changed 3 times"));
    assert!(read("agents/mcp-prompts/test_changing_prompt.json").contains("Changed 1 times"));
}

/// `server-sse-polling` needs a server that lets go of a call's stream mid-call: one whose calls
/// hold their stream 200 ms (`mcp_stream_hold`), while the example's `test_reconnection` takes a
/// second; the suite's client resumes with `Last-Event-ID` and must get the answer there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2025_11_25_polling_scenario_resumes_a_stream_the_server_let_go_of() {
    let server = TestServer::start_with(&mcp_example(), |config| {
        config.mcp_agent = Some("fixtures".to_owned());
        config.mcp_stream_hold = Some(std::time::Duration::from_millis(200));
    })
    .await;
    let (server, checks) = run_scenarios(
        server,
        "TOOLHOST_TEST_CONFORMANCE_2025",
        "2025-11-25",
        &["server-sse-polling"],
    )
    .await;
    assert!(completed_calls(&server).contains("test_reconnection"));
    // A stream never let go of would pass too (with INFO): the resume itself must succeed.
    assert!(
        succeeded(&checks, "server-sse-disconnect-resume"),
        "{checks:?}"
    );
    // The newer suite's scenario of 2025-11-25 sessions (opened, closed with DELETE, then 404;
    // a server without sessions would pass with INFO).
    let (_, checks) = run_scenarios(
        server,
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "2025-11-25",
        &["server-session-lifecycle"],
    )
    .await;
    assert!(
        checks.len() >= 3 && checks.iter().all(|c| c["status"] == "SUCCESS"),
        "{checks:?}"
    );
}
