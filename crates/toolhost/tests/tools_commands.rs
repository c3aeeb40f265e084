//! The `toolhost tools` commands on the example project: outputs and exit codes are the contract.

mod common;

use common::{quickstart, toolhost};
use serde_json::{json, Value};

const TOOLS: [&str; 6] = [
    "create_ticket",
    "get_current_time",
    "get_weather",
    "process_payment",
    "search_knowledge_base",
    "sentiment_analysis",
];

#[test]
fn list_prints_one_line_per_tool_with_kind_and_description() {
    let run = toolhost(&["tools", "list", &quickstart()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", run.stdout);
    assert_eq!(lines.len(), 1 + TOOLS.len(), "{}", run.stdout);
    for (line, name) in lines[1..].iter().zip(TOOLS) {
        assert!(line.starts_with(name), "{line}");
    }
    let sentiment = lines
        .iter()
        .find(|l| l.starts_with("sentiment_analysis"))
        .unwrap();
    assert!(
        sentiment.contains("latent") && sentiment.contains("Analyzes the sentiment"),
        "{sentiment}"
    );
    let weather = lines.iter().find(|l| l.starts_with("get_weather")).unwrap();
    assert!(
        weather.contains("explicit (activity get_weather)"),
        "{weather}"
    );
}

#[test]
fn list_json_prints_definitions_without_meta_properties_of_explicit_tools() {
    let run = toolhost(&["tools", "list", &quickstart(), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let defs: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    let weather = &defs[2];
    assert_eq!(weather["kind"], json!("explicit"));
    assert!(weather["parameters"]["properties"]
        .get("_activity")
        .is_none());
    let sentiment = &defs[5];
    assert_eq!(sentiment["kind"], json!("latent"));
    assert!(sentiment["parameters"]["properties"]
        .get("_output")
        .is_some());
    let payment = &defs[3];
    assert_eq!(payment["variables"][0]["type"], json!("secret"));
    assert_eq!(payment["idempotent"], json!(true));
}

#[test]
fn schema_prints_each_providers_declarations_and_reports_drops_on_stderr() {
    for (provider, name_at) in [
        ("openai", "/function/name"),
        ("openai-strict", "/function/name"),
        ("anthropic", "/name"),
        ("gemini", "/name"),
    ] {
        let run = toolhost(&["tools", "schema", &quickstart(), "--provider", provider]);
        assert_eq!(run.code, 0, "{provider}: {}", run.stderr);
        let decls: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
        let names: Vec<&str> = decls
            .iter()
            .map(|d| d.pointer(name_at).unwrap().as_str().unwrap())
            .collect();
        assert_eq!(names, TOOLS, "{provider}");
    }
    let strict = toolhost(&[
        "tools",
        "schema",
        &quickstart(),
        "--provider",
        "openai-strict",
        "--tool",
        "create_ticket",
    ]);
    assert!(
        strict
            .stderr
            .contains("create_ticket: minLength removed at /properties/title"),
        "{}",
        strict.stderr
    );
    let decls: Vec<Value> = serde_json::from_str(&strict.stdout).unwrap();
    assert_eq!(decls.len(), 1);
    assert_eq!(decls[0]["function"]["strict"], json!(true));
    let gemini = toolhost(&[
        "tools",
        "schema",
        &quickstart(),
        "--provider",
        "gemini",
        "--tool",
        "process_payment",
    ]);
    assert!(
        gemini
            .stderr
            .contains("process_payment: exclusiveMinimum removed at /properties/amount"),
        "{}",
        gemini.stderr
    );
}

#[test]
fn schema_refuses_an_unknown_provider_with_the_choices() {
    let run = toolhost(&["tools", "schema", &quickstart(), "--provider", "cohere"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("openai, openai-strict, anthropic, gemini"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_prints_valid_arguments_with_defaults_applied() {
    let run = toolhost(&[
        "tools",
        "check",
        &quickstart(),
        "get_weather",
        r#"{"location": "Oslo"}"#,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let args: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(args, json!({"location": "Oslo", "units": "celsius"}));
}

#[test]
fn check_prints_every_violation_and_exits_1() {
    let run = toolhost(&[
        "tools",
        "check",
        &quickstart(),
        "create_ticket",
        r#"{"title": "bad", "priority": "someday", "extra": 1}"#,
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for expected in [
        "missing required property \"description\"",
        "missing required property \"category\"",
        "at /title: expected at least 5 characters",
        "at /priority: expected one of",
        "unexpected property \"extra\"",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected} not in {}",
            run.stdout
        );
    }
    let json_run = toolhost(&[
        "tools",
        "check",
        &quickstart(),
        "create_ticket",
        r#"{"title": "bad"}"#,
        "--json",
    ]);
    assert_eq!(json_run.code, 1);
    let out: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(out["valid"], json!(false));
    assert!(out["violations"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["pointer"] == json!("/title")));
}

#[test]
fn check_treats_unparsable_arguments_as_invalid() {
    let run = toolhost(&[
        "tools",
        "check",
        &quickstart(),
        "get_weather",
        r#"{"location": "Oslo", "location": "Rome"}"#,
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("duplicate key \"location\""),
        "{}",
        run.stderr
    );
}

#[test]
fn check_exits_2_for_an_unknown_tool_and_lists_the_real_ones() {
    let run = toolhost(&["tools", "check", &quickstart(), "no_such_tool", "{}"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no tool named \"no_such_tool\""),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("get_weather"), "{}", run.stderr);
}

#[test]
fn request_combines_tools_and_the_output_schema() {
    let project = common::TempProject::new();
    let schema_file = project.root.join("output.json");
    std::fs::write(&schema_file, r#"{"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}"#).unwrap();
    let run = toolhost(&[
        "tools",
        "request",
        &quickstart(),
        "--output-schema",
        &schema_file.display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(schema["required"], json!(["meta", "calls", "output"]));
    assert_eq!(
        schema["properties"]["output"]["type"],
        json!(["object", "null"])
    );
    let items = schema["properties"]["calls"]["items"]["anyOf"]
        .as_array()
        .unwrap();
    assert_eq!(items.len(), TOOLS.len());
    let by_tool = |name: &str| {
        items
            .iter()
            .find(|i| i["properties"]["_tool"]["const"] == json!(name))
            .unwrap()
    };
    assert!(by_tool("sentiment_analysis")["properties"]
        .get("_output")
        .is_some());
    assert!(by_tool("get_weather")["properties"]
        .get("_output")
        .is_none());
}

#[test]
fn request_for_a_provider_is_the_schema_it_is_sent_with_what_is_lost() {
    let run = toolhost(&[
        "tools",
        "request",
        &quickstart(),
        "--provider",
        "openai-strict",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    // Strict mode: no property may be left out.
    assert_eq!(schema["additionalProperties"], json!(false));
    assert!(
        run.stderr.contains("note: the combined request: "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_project_is_one_sentence_and_its_cause() {
    let run = toolhost(&["tools", "list", "/nonexistent/toolhost-project"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: the project's tools could not be read."),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("cause: /nonexistent/toolhost-project is not a project folder"),
        "{}",
        run.stderr
    );
}
