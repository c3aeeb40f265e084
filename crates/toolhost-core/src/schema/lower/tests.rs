//! Lowering per provider, checked on one canonical schema.

use super::*;

fn canonical() -> Value {
    json!({
        "type": "object",
        "properties": {
            "zip": {"type": "string", "pattern": "^[0-9]{5}$", "minLength": 5},
            "limit": {"type": "integer", "default": 10, "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        },
        "required": ["zip"],
        "additionalProperties": false
    })
}

#[test]
fn strict_requires_everything_and_makes_optional_nullable() {
    let l = lower_tool(Provider::OpenAiStrict, "t", "d", &canonical());
    assert!(l.strict);
    let p = l.parameters().unwrap();
    assert_eq!(p["required"], json!(["zip", "limit", "tags"]));
    assert_eq!(p["properties"]["limit"]["type"], json!(["integer", "null"]));
    assert_eq!(p["additionalProperties"], json!(false));
    assert!(p["properties"]["zip"].get("minLength").is_none());
    assert!(l
        .dropped
        .iter()
        .any(|d| d.to_string() == "minLength removed at /properties/zip"));
    let lifted = l.lift_arguments(json!({"zip": "12345", "limit": null, "tags": null}));
    assert_eq!(lifted, json!({"zip": "12345"}));
}

#[test]
fn a_header_annotation_never_reaches_a_model() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"],
        "additionalProperties": false});
    for provider in Provider::ALL {
        let l = lower_tool(provider, "t", "d", &schema);
        let sent = l.parameters().unwrap().to_string();
        assert!(!sent.contains("x-mcp-header"), "{provider}: {sent}");
        assert!(
            !l.dropped.iter().any(|d| d.pointer.contains("region")),
            "{provider}: the annotation relaxes nothing: {:?}",
            l.dropped
        );
    }
}

#[test]
fn records_turn_strict_off_with_a_note() {
    let schema = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}});
    let l = lower_tool(Provider::OpenAiStrict, "t", "d", &schema);
    assert!(!l.strict);
    assert_eq!(l.declaration["function"]["strict"], json!(false));
    assert!(
        l.dropped[0].to_string().contains("strict mode disabled"),
        "{:?}",
        l.dropped
    );
}

#[test]
fn gemini_drops_what_its_subset_lacks_and_reports_it() {
    let l = lower_tool(Provider::Gemini, "t", "d", &canonical());
    let p = l.parameters().unwrap();
    assert!(p.get("additionalProperties").is_none());
    assert!(p["properties"]["limit"].get("exclusiveMinimum").is_none());
    let notes: Vec<String> = l.dropped.iter().map(ToString::to_string).collect();
    assert!(
        notes.contains(&"exclusiveMinimum removed at /properties/limit".to_owned()),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("additionalProperties: false removed")),
        "{notes:?}"
    );
}

#[test]
fn gemini_turns_type_arrays_into_nullable() {
    let schema = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}});
    let l = lower_tool(Provider::Gemini, "t", "d", &schema);
    assert_eq!(
        l.parameters().unwrap()["properties"]["a"],
        json!({"type": "string", "nullable": true})
    );
}

#[test]
fn anthropic_and_openai_keep_the_schema() {
    let a = lower_tool(Provider::Anthropic, "t", "d", &canonical());
    assert_eq!(a.declaration["input_schema"], canonical());
    assert!(a.dropped.is_empty());
    let o = lower_tool(Provider::OpenAi, "t", "d", &canonical());
    assert_eq!(o.declaration["function"]["parameters"], canonical());
}

/// A general schema's keywords (an MCP server's tool), canonical already.
fn general() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": true, "uniqueItems": true}
        },
        "allOf": [{"required": ["tags"]}]
    })
}

#[test]
fn a_general_schema_is_kept_whole_where_it_can_be_and_reported_where_not() {
    let a = lower_tool(Provider::Anthropic, "t", "d", &general());
    assert_eq!(a.declaration["input_schema"], general());
    assert!(a.dropped.is_empty());
    let strict = lower_tool(Provider::OpenAiStrict, "t", "d", &general());
    assert!(!strict.strict);
    assert_eq!(strict.declaration["function"]["parameters"], general());
    assert!(
        strict.dropped[0]
            .what
            .contains("cannot be expressed in strict mode"),
        "{:?}",
        strict.dropped
    );
    let g = lower_tool(Provider::Gemini, "t", "d", &general());
    let said: Vec<String> = g.dropped.iter().map(ToString::to_string).collect();
    assert!(said.contains(&"allOf removed at /".to_owned()), "{said:?}");
    assert!(
        said.contains(&"the schema `true` removed at /properties/tags/items".to_owned()),
        "{said:?}"
    );
    assert!(
        said.iter().any(|s| s.starts_with("uniqueItems removed")),
        "{said:?}"
    );
    assert_eq!(
        g.declaration["parameters"]["properties"]["tags"]["items"],
        json!({})
    );
}
