//! toolhost as the client in the MCP project's conformance suite (`@modelcontextprotocol/
//! conformance` 0.1.16, pinned in `scripts/test-node/`): for each client scenario the suite
//! starts its own server and runs `tests/mcp/conformance_client.py`, which names that server in
//! a project's `agents/mcp/` and runs the project's agent with `toolhost run` (approving its
//! calls as a person would). Every check the suite makes must succeed.
//!
//! Run: `initialize`, `tools_call`, `sse-retry`, and every `auth/*` scenario of the 2025-11-25
//! and 2025-03-26 revisions plus the client credentials extension with a secret (the script
//! logs in with `toolhost mcp login`, playing the person's browser); and of the 0.2 suite for
//! 2026-07-28 the `auth/*` scenarios with `resource-mismatch`, the issuer checks of
//! authorization answers (RFC 9207), `offline_access` and a server that moves to another
//! authorization server, and `tools_call` and `request-metadata` with toolhost as a stateless
//! client, `http-custom-headers` and `http-invalid-tool-headers` (SEP-2243 header-marked
//! arguments), `json-schema-ref-no-deref`, and with toolhost between the suite's server and an
//! MCP client of its own, `sep-2322-client-request-state` and `elicitation-sep1034-client-
//! defaults` and `json-schema-2020-12-preservation`; `http-standard-headers` with the checks
//! of requests toolhost does not make skipped. Not run: the enterprise extensions.

mod common;
#[path = "../../toolhost-server/tests/conformance/mod.rs"]
mod conformance;

use common::{output_of, scripted_agent, test_python, TempProject};
use conformance::{checks_in, failures, installed, printed};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs client scenario `name` with toolhost running an agent whose prompt offers `tools` of the
/// scenario's server and whose scripted model says `script`: the checks the suite made, once
/// every one succeeded.
fn scenario(name: &str, tools: &[&str], script: &str) -> Vec<Value> {
    scenario_of("TOOLHOST_TEST_CONFORMANCE_2025", name, tools, script)
}

/// [`scenario`] with the suite that `suite_var` names.
fn scenario_of(suite_var: &str, name: &str, tools: &[&str], script: &str) -> Vec<Value> {
    scenario_run(suite_var, name, tools, script, "")
}

/// [`scenario_of`] with `prefix` before the client's command (an environment setting).
fn scenario_run(
    suite_var: &str,
    name: &str,
    tools: &[&str],
    script: &str,
    prefix: &str,
) -> Vec<Value> {
    scenario_skipping(suite_var, name, tools, script, prefix, &[])
}

/// Runs client scenario `name` of the suite `suite_var` names with toolhost between the suite's
/// server and an MCP client of its own: `tests/mcp/conformance_proxy_client.py` serves an agent
/// offering `tools` of the scenario's server with `toolhost mcp` and calls each. The checks,
/// once every one succeeded; and what the client saw (its `seen.json`).
fn proxied_scenario(suite_var: &str, name: &str, tools: &[&str]) -> (Vec<Value>, Value) {
    run_client(
        suite_var,
        name,
        tools,
        "{\"text\": \"unused\"}\n",
        ("", "conformance_proxy_client.py"),
        &[],
    )
}

/// [`scenario_run`] where the checks `may_skip` may be SKIPPED (they test what toolhost does not
/// declare), and must be nothing else but SUCCESS.
fn scenario_skipping(
    suite_var: &str,
    name: &str,
    tools: &[&str],
    script: &str,
    prefix: &str,
    may_skip: &[&str],
) -> Vec<Value> {
    let client = (prefix, "conformance_client.py");
    run_client(suite_var, name, tools, script, client, may_skip).0
}

/// Runs client scenario `name` with the client `client.1` (under `tests/mcp/`, its command
/// after the prefix `client.0`) on a project whose agent offers `tools` and whose model says
/// `script`: the checks, once every one but `may_skip` succeeded, and what the client wrote in
/// the project's `seen.json`, if anything.
fn run_client(
    suite_var: &str,
    name: &str,
    tools: &[&str],
    script: &str,
    client: (&str, &str),
    may_skip: &[&str],
) -> (Vec<Value>, Value) {
    let (prefix, client) = client;
    let project = TempProject::new();
    scripted_agent(&project.root, tools, script);
    std::fs::create_dir_all(project.root.join("agents/mcp")).unwrap();
    let out = project.root.join("results");
    let client = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/mcp")
        .join(client);
    let command = format!(
        "{prefix}{} {} {} {} {}",
        test_python(),
        client.display(),
        env!("CARGO_BIN_EXE_toolhost"),
        project.root.display(),
        project.root.join("data").display()
    );
    let ran = output_of(
        Command::new(installed("TOOLHOST_TEST_NODE22"))
            .arg(installed(suite_var))
            .args(["client", "--scenario", name, "--command", &command, "-o"])
            .arg(&out)
            .stdin(Stdio::null()),
    );
    let printed = printed(&ran);
    let checks = checks_in(&out);
    assert!(!checks.is_empty(), "{name} saved no checks:\n{printed}");
    let counted: Vec<Value> = checks
        .iter()
        .filter(|c| !(c["status"] == "SKIPPED" && may_skip.iter().any(|id| c["id"] == *id)))
        .cloned()
        .collect();
    let failed = failures(name, &counted);
    assert!(
        failed.is_empty(),
        "{name}:\n{}\n{printed}",
        failed.join("\n")
    );
    assert!(ran.status.success(), "{name}:\n{printed}");
    let seen = std::fs::read_to_string(project.root.join("seen.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    (checks, seen)
}

#[test]
fn toolhost_initializes_with_the_suites_server() {
    let checks = scenario("initialize", &[], "{\"text\": \"hello\"}\n");
    assert!(
        checks
            .iter()
            .any(|c| c["id"] == "mcp-client-initialization"),
        "{checks:?}"
    );
}

/// Runs `tools_call` of the suite `suite_var` names, the model asking for 2 + 3: the suite's tool
/// must have been called with them and answered 5.
fn adds_two_and_three(suite_var: &str) {
    let checks = scenario_of(
        suite_var,
        "tools_call",
        &["conformance.add_numbers"],
        "{\"toolCalls\": [{\"name\": \"conformance.add_numbers\", \"arguments\": {\"a\": 2, \"b\": 3}}]}\n{\"text\": \"5\"}\n",
    );
    let added = checks
        .iter()
        .find(|c| c["id"] == "tool-add-numbers")
        .expect("the tool was called");
    assert_eq!(added["details"]["result"], 5, "{added}");
}

#[test]
fn toolhost_calls_the_suites_tool_with_the_arguments_its_model_gave() {
    adds_two_and_three("TOOLHOST_TEST_CONFORMANCE_2025");
}

/// Under 2026-07-28 toolhost finds the server stateless (`server/discover`; the suite's server
/// knows no `initialize`) and calls its tool with the versions and capabilities in each request.
#[test]
fn toolhost_calls_the_tool_of_a_stateless_server() {
    adds_two_and_three("TOOLHOST_TEST_CONFORMANCE_2026");
}

/// Every request of a 2026-07-28 client carries the version header and `_meta` (version,
/// capabilities, client info), and toolhost retries with a version the server takes when it
/// refuses the first. It declares elicitation and sampling, which it passes on to whoever made
/// a call (its calls say per request what that caller answers); the check of roots is skipped:
/// toolhost declares no roots, which the check shows.
#[test]
fn toolhost_sends_the_request_metadata_of_a_stateless_client() {
    let roots = "sep-2575-client-declares-roots-capability";
    let checks = scenario_skipping(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "request-metadata",
        &[],
        "{\"text\": \"hello\"}\n",
        "",
        &[roots],
    );
    let check = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap();
    assert!(check(roots)["details"]["capabilityValue"].is_null());
    for declared in [
        "sep-2575-client-declares-sampling-capability",
        "sep-2575-client-declares-elicitation-capability",
    ] {
        assert_eq!(check(declared)["status"], "SUCCESS", "{}", check(declared));
    }
    assert!(checks
        .iter()
        .any(|c| c["id"] == "sep-2575-client-retry-supported-version" && c["status"] == "SUCCESS"));
}

#[test]
fn toolhost_reconnects_to_a_stream_the_server_closed_and_gets_the_answer() {
    scenario(
        "sse-retry",
        &["conformance.test_reconnection"],
        "{\"toolCalls\": [{\"name\": \"conformance.test_reconnection\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
    );
}

/// The authorization scenarios: toolhost finds the authorization server from the server's
/// 401, logs in (the script plays the person's browser) or uses client credentials, and then
/// lists the server's tools with the token.
#[test]
fn toolhost_gets_authorized_as_each_auth_scenario_asks() {
    authorized_as("TOOLHOST_TEST_CONFORMANCE_2025", &AUTH_SCENARIOS);
}

/// A login through `toolhost serve` instead of a terminal: its API answers the address to
/// open and the authorization server sends the browser back to the server's callback page; the
/// grant kept there is the one `toolhost run` then uses.
#[test]
fn toolhost_serve_logs_in_through_its_own_callback_page() {
    for name in [
        "auth/metadata-default",
        "auth/basic-cimd",
        "auth/pre-registration",
    ] {
        let checks = scenario_run(
            "TOOLHOST_TEST_CONFORMANCE_2025",
            name,
            &[],
            "{\"text\": \"hello\"}\n",
            "TOOLHOST_LOGIN_VIA=serve ",
        );
        // The person was sent back to the server's page, not to a loopback port.
        let redirected_to = checks
            .iter()
            .filter_map(|c| c["details"]["query"]["redirect_uri"].as_str())
            .collect::<Vec<_>>();
        assert!(
            !redirected_to.is_empty()
                && redirected_to
                    .iter()
                    .all(|uri| uri.ends_with("/mcp/oauth/callback")),
            "{name}: {redirected_to:?}"
        );
    }
}

/// The same under the 2026-07-28 suite, which adds a server whose resource metadata names
/// another resource (toolhost must not get a token for it), authorization answers that name
/// their issuer or not, rightly or wrongly (RFC 9207), an issuer whose metadata names another,
/// `offline_access` asked for only where it is offered, and an authorization server replaced
/// by another (toolhost registers itself again there, reusing nothing of the first).
#[test]
fn toolhost_gets_authorized_as_each_auth_scenario_of_2026_asks() {
    let mut names: Vec<&str> = AUTH_SCENARIOS
        .iter()
        .copied()
        .filter(|n| !n.contains("2025-03-26") && !n.contains("client-credentials"))
        .collect();
    names.extend([
        "auth/resource-mismatch",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
    ]);
    authorized_as("TOOLHOST_TEST_CONFORMANCE_2026", &names);
}

/// Runs each authorization scenario `names` of the suite `suite_var` names; every one must pass.
fn authorized_as(suite_var: &str, names: &[&str]) {
    let mut failed = Vec::new();
    for name in names {
        // Step-up asks for more scope on a call only, and the authorization server changes
        // after the first request: the agent calls the server's tool.
        let (tools, script): (&[&str], &str) = match *name {
            "auth/scope-step-up" | "auth/authorization-server-migration" => (
                &["conformance.test-tool"],
                "{\"toolCalls\": [{\"name\": \"conformance.test-tool\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
            ),
            _ => (&[], "{\"text\": \"hello\"}\n"),
        };
        let outcome = std::panic::catch_unwind(|| scenario_of(suite_var, name, tools, script));
        if let Err(why) = outcome {
            let why = why
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "a panic".to_owned());
            failed.push(why);
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

const AUTH_SCENARIOS: [&str; 18] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

/// SEP-2243 as a client (2026-07-28): each argument the tool's schema marks `x-mcp-header` is
/// repeated in its `Mcp-Param-*` header (plain when it can be, else base64; numbers and booleans
/// as JSON writes them), and an argument left out has no header. The suite suggests `null` for
/// the second tool's `verbose`, which toolhost would refuse (the schema says boolean), so the
/// model leaves it out.
#[test]
fn toolhost_repeats_header_marked_arguments_in_their_headers() {
    let args = r#"{"region": "us-west1", "priority": 42, "verbose": false, "debug": true, "empty_val": "", "method_val": "test-method", "float_val": 3.14159, "non_ascii_val": "Hello, 世界", "whitespace_val": " padded ", "leading_space_val": " us-west1", "trailing_space_val": "us-west1 ", "internal_space_val": "us west 1", "control_char_val": "line1\nline2", "crlf_val": "line1\r\nline2", "tab_val": "\tindented", "query": "SELECT * FROM users"}"#;
    let without_verbose = r#"{"region": "us-east1", "priority": 1, "query": "SELECT 1"}"#;
    let script = format!(
        "{{\"toolCalls\": [{{\"name\": \"conformance.test_custom_headers\", \"arguments\": {args}}}, {{\"name\": \"conformance.test_custom_headers_null\", \"arguments\": {without_verbose}}}]}}\n{{\"text\": \"done\"}}\n"
    );
    let checks = scenario_of(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "http-custom-headers",
        &[
            "conformance.test_custom_headers",
            "conformance.test_custom_headers_null",
        ],
        &script,
    );
    assert!(
        checks
            .iter()
            .any(|c| c["id"] == "sep-2243-client-omit-null" && c["status"] == "SUCCESS"),
        "{checks:?}"
    );
}

/// A server's tool whose `x-mcp-header` is malformed (empty, on an object, an array, twice...)
/// is left out; the server's valid tool is still called.
#[test]
fn toolhost_leaves_out_tools_with_malformed_header_marks_and_keeps_the_rest() {
    scenario_of(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "http-invalid-tool-headers",
        &["conformance.valid_tool"],
        "{\"toolCalls\": [{\"name\": \"conformance.valid_tool\", \"arguments\": {\"region\": \"us-west1\"}}]}\n{\"text\": \"done\"}\n",
    );
}

/// A tool whose schema `$ref`s a network URI: toolhost lists it and never fetches the URI
/// (SEP-2106; such a reference is refused, naming its place, not followed).
#[test]
fn toolhost_never_fetches_a_network_reference_in_a_tools_schema() {
    scenario_of(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "json-schema-ref-no-deref",
        &[],
        "{\"text\": \"done\"}\n",
    );
}

/// The messages of the forms the proxied client was shown besides the calls' approvals: the
/// questions the suite's server asked, relayed.
fn relayed_forms(seen: &Value) -> Vec<&str> {
    seen["forms"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|f| !f.starts_with("Approve"))
        .collect()
}

/// SEP-2322 as a client, with toolhost between the suite's stateless server and an MCP client
/// that answers forms: the server answers `input_required`, toolhost relays its question to the
/// client that made the call and calls again with the answer and the request state exactly as
/// given (a new request id; no state when none was given), never with another call's state,
/// and takes a result without `resultType` as complete.
#[test]
fn toolhost_relays_a_servers_questions_to_its_own_client_and_calls_again_with_the_answers() {
    let tools = [
        "conformance.test_mrtr_echo_state",
        "conformance.test_mrtr_no_state",
        "conformance.test_mrtr_unrelated",
        "conformance.test_mrtr_no_result_type",
    ];
    let (_, seen) = proxied_scenario(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "sep-2322-client-request-state",
        &tools,
    );
    let answered: Vec<(&str, &str)> = seen["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["isError"] == false)
        .map(|c| (c["tool"].as_str().unwrap(), c["text"].as_str().unwrap()))
        .collect();
    for (tool, text) in [
        ("conformance.test_mrtr_echo_state", "echo-state-ok"),
        ("conformance.test_mrtr_no_state", "no-state-ok"),
        ("conformance.test_mrtr_unrelated", "unrelated-ok"),
    ] {
        assert!(answered.contains(&(tool, text)), "{tool}: {seen}");
    }
    // The server's two questions reached the client, each after the call's approval.
    assert_eq!(
        relayed_forms(&seen),
        [
            "Please confirm to continue",
            "Please confirm to continue (no state test)"
        ],
        "{seen}"
    );
}

/// SEP-1034 as a client, with toolhost between the suite's 2025-11-25 server and an MCP client
/// that answers forms with their fields' defaults: the server's elicitation request within the
/// call (the one call under way) is relayed to that client, and its answer, defaults and all,
/// goes back.
#[test]
fn toolhost_relays_a_2025_servers_elicitation_to_its_own_client() {
    let (_, seen) = proxied_scenario(
        "TOOLHOST_TEST_CONFORMANCE_2025",
        "elicitation-sep1034-client-defaults",
        &["conformance.test_client_elicitation_defaults"],
    );
    assert_eq!(
        relayed_forms(&seen),
        ["Test client default value handling - please accept with defaults"],
        "{seen}"
    );
}

/// SEP-2243's standard headers as a client (2026-07-28): every POST toolhost makes carries
/// `Mcp-Method`, and a call `Mcp-Name`. The suite also looks at requests toolhost does not make
/// of a stateless server (`initialize`, `resources/*`, `prompts/*`), whose checks it skips; the
/// test requires the ones toolhost makes to succeed and the skips to be only those.
#[test]
fn toolhost_sends_the_standard_headers_on_its_requests() {
    let (checks, _) = run_client(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "http-standard-headers",
        &["conformance.test_headers"],
        "{\"toolCalls\": [{\"name\": \"conformance.test_headers\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
        ("", "conformance_client.py"),
        &["sep-2243-client-includes-standard-headers"],
    );
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["status"].as_str().unwrap_or_default())
    };
    for made in [
        "ClientMcpMethodHeader_tools_list",
        "ClientMcpMethodHeader_tools_call",
        "ClientMcpNameHeader_tools_call",
    ] {
        assert_eq!(status(made), Some("SUCCESS"), "{made}: {checks:?}");
    }
    for check in &checks {
        if check["status"] == "SKIPPED" {
            let name = check["name"].as_str().unwrap_or_default();
            assert!(
                ["initialize", "initialized", "resources_", "prompts_"]
                    .iter()
                    .any(|not_made| name.contains(not_made)),
                "{name} was skipped"
            );
        }
    }
}

/// SEP-1613 and SEP-2106 through toolhost: a server's tool schema in all of JSON Schema 2020-12
/// (`$schema`, `$defs` with an `$anchor`, `allOf`, `if`/`then`/`else`, `additionalProperties`)
/// is imported and served again as the server declared it: the proxied client echoes the schema
/// toolhost lists back to the suite's server, which compares it with its own.
#[test]
fn a_servers_tool_schema_survives_toolhosts_import_and_serving_whole() {
    let (checks, _) = proxied_scenario(
        "TOOLHOST_TEST_CONFORMANCE_2026",
        "json-schema-2020-12-preservation",
        &[
            "conformance.json_schema_2020_12_tool",
            "conformance.json_schema_echo",
        ],
    );
    for kept in [
        "json-schema-2020-12-client-$schema-preserved",
        "sep-2106-client-composition-keywords-preserved",
        "sep-2106-client-conditional-keywords-preserved",
        "sep-2106-client-anchor-keyword-preserved",
    ] {
        assert!(
            checks
                .iter()
                .any(|c| c["id"] == kept && c["status"] == "SUCCESS"),
            "{kept}: {checks:?}"
        );
    }
}
