//! A bad tool file is reported with its path and the JSON pointer of the problem, and never
//! hides the good files beside it.

mod common;

use common::{toolhost, TempProject};

fn deep_schema(levels: usize) -> String {
    let mut schema = r#"{"type": "string"}"#.to_owned();
    for _ in 1..levels {
        schema = format!(r#"{{"type": "object", "properties": {{"x": {schema}}}}}"#);
    }
    format!(r#"{{"type": "object", "description": "deep", "properties": {{"x": {schema}}}}}"#)
}

fn project() -> TempProject {
    let p = TempProject::new();
    p.tool("good.json", r#"{"type": "object", "description": "A good tool.", "properties": {"n": {"type": "integer"}}}"#)
        .tool("broken_json.json", r#"{"type": "object", "description": "x", "#)
        .tool("outside_subset.json", r#"{"type": "object", "description": "x", "properties": {"a": {"type": "string", "allOf": [{"minLength": 1}]}}}"#)
        .tool("too_deep.json", &deep_schema(8))
        .tool("mismatch.json", r#"{"type": "object", "description": "x", "properties": {"_tool": {"const": "other_name"}}}"#)
        .tool("not_a_tool.txt", "ignored");
    p
}

#[test]
fn good_tools_are_listed_and_each_bad_file_is_named_with_its_pointer() {
    let p = project();
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 2, "a bad file makes the run fail");
    let listed: Vec<&str> = run
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(listed, ["good"], "{}", run.stdout);
    for (file, expected) in [
        ("broken_json.json", "not valid JSON"),
        ("outside_subset.json", "at /properties/a/allOf: keyword `allOf` is outside the supported subset"),
        ("too_deep.json", "nests 8 levels deep; the limit is 7"),
        ("mismatch.json", "at /properties/_tool/const: `_tool` is \"other_name\" but the file is named mismatch.json"),
    ] {
        let line = run
            .stderr
            .lines()
            .zip(run.stderr.lines().skip(1))
            .find(|(l, _)| l.contains(file))
            .map(|(l, cause)| format!("{l}\n{cause}"))
            .unwrap_or_else(|| panic!("{file} not reported:\n{}", run.stderr));
        assert!(line.contains(expected), "{file}: {line}");
    }
    assert!(!run.stderr.contains("not_a_tool"), "{}", run.stderr);
}

#[test]
fn seven_levels_load_where_eight_do_not() {
    let p = TempProject::new();
    p.tool("seven.json", &deep_schema(7));
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn checking_a_good_tool_works_beside_bad_files_and_a_bad_tool_exits_2() {
    let p = project();
    let dir = p.root.display().to_string();
    let good = toolhost(&["tools", "check", &dir, "good", r#"{"n": 3}"#]);
    assert_eq!(good.code, 0, "{}", good.stderr);
    let bad = toolhost(&["tools", "check", &dir, "too_deep", "{}"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("defined by a file that did not load"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_non_snake_case_name_is_a_warning_not_a_rejection() {
    let p = TempProject::new();
    p.tool(
        "getWeather.json",
        r#"{"type": "object", "description": "Weather.", "properties": {}}"#,
    );
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("getWeather"));
    assert!(
        run.stderr.contains("warning:") && run.stderr.contains("not snake_case"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_name_a_provider_refuses_is_renamed_on_the_wire() {
    let p = TempProject::new();
    p.tool(
        "weather.lookup.json",
        r#"{"type": "object", "description": "Weather.", "properties": {}}"#,
    );
    let run = toolhost(&[
        "tools",
        "schema",
        &p.root.display().to_string(),
        "--provider",
        "openai",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"weather_lookup\""), "{}", run.stdout);
    assert!(
        run.stderr.contains("sent as \"weather_lookup\""),
        "{}",
        run.stderr
    );
}
