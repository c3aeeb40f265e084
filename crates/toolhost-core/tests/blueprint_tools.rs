//! Blueprint tools (spec 004): meta-properties kept apart from arguments, the binding rule for
//! latent and explicit tools, activities registered through the library, last-one-wins.

use futures_executor::block_on;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::blueprint::{request_schema, Activities, Binding, Blueprint, CallMeta};
use toolhost_core::tool::{CallFailure, ToolError};
use toolhost_core::{ToolContext, ToolSet};

fn sentiment(description: &str) -> Blueprint {
    Blueprint::from_value(
        "sentiment_analysis",
        &json!({
            "type": "object",
            "description": description,
            "properties": {
                "_tool": {"type": "string", "const": "sentiment_analysis"},
                "_reasoningForCall": {"type": "string"},
                "text": {"type": "string", "description": "Text to analyze"},
                "_output": {
                    "type": "object",
                    "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number", "maximum": 1}},
                    "required": ["sentiment", "confidence"]
                }
            },
            "required": ["_tool", "text"]
        }),
    )
    .unwrap()
}

#[test]
fn an_activity_registered_under_the_tool_name_binds_and_receives_only_the_arguments() {
    let seen: Arc<Mutex<Vec<(Value, CallMeta)>>> = Arc::default();
    let log = seen.clone();
    let mut activities = Activities::new();
    activities.register("sentiment_analysis", move |args, meta, _ctx| {
        log.lock().unwrap().push((args, meta));
        async { Ok::<_, ToolError>(json!({"sentiment": "positive", "confidence": 0.99})) }
    });
    let (tool, binding) = activities
        .bind(&sentiment("Analyzes text sentiment"))
        .unwrap();
    assert_eq!(
        binding,
        Binding::Explicit {
            activity: "sentiment_analysis".into()
        }
    );
    assert!(
        tool.definition().parameters["properties"]
            .get("_output")
            .is_none(),
        "explicit tools hide _output"
    );

    let set = ToolSet::from_tools([tool]);
    let out = block_on(set.call(
        "sentiment_analysis",
        r#"{"text": "This is the best!", "_reasoningForCall": "the user asked"}"#,
        ToolContext::new("c1"),
    ))
    .unwrap();
    assert_eq!(out, r#"{"sentiment":"positive","confidence":0.99}"#);
    let calls = seen.lock().unwrap();
    assert_eq!(calls[0].0, json!({"text": "This is the best!"}));
    assert_eq!(calls[0].1.reasoning_for_call, Some(json!("the user asked")));
}

#[test]
fn an_explicit_tools_output_is_checked_against_its_output_schema() {
    let mut activities = Activities::new();
    activities.register("sentiment_analysis", |_, _, _| async {
        Ok::<_, ToolError>(json!({"sentiment": "positive", "confidence": 7}))
    });
    let (tool, _) = activities.bind(&sentiment("Analyzes")).unwrap();
    let err = block_on(tool.call(json!({"text": "x"}), ToolContext::new("c"))).unwrap_err();
    assert!(matches!(err, CallFailure::InvalidOutput { .. }), "{err:?}");
}

#[test]
fn a_latent_tool_shows_its_output_schema_and_is_answered_by_the_model() {
    let (tool, binding) = Activities::new().bind(&sentiment("Analyzes")).unwrap();
    assert_eq!(binding, Binding::Latent);
    let params = &tool.definition().parameters;
    assert!(params["properties"].get("_output").is_some());
    assert!(params["properties"].get("_tool").is_none());
    // A latent call carries its own answer in `_output`, validated like the arguments.
    assert!(tool
        .validate(json!({"text": "x", "_output": {"sentiment": "neutral", "confidence": 0.5}}))
        .is_ok());
    assert!(tool
        .validate(json!({"text": "x", "_output": {"sentiment": "neutral", "confidence": 2}}))
        .is_err());
    // `_output` is required: the model's answer is the result.
    assert_eq!(params["required"], json!(["text", "_output"]));
    let err = block_on(tool.call(json!({"text": "x"}), ToolContext::new("c"))).unwrap_err();
    assert!(
        matches!(err, CallFailure::InvalidArguments { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("_output"), "{err}");
    let out = block_on(tool.call(
        json!({"text": "x", "_output": {"sentiment": "neutral", "confidence": 0.5}}),
        ToolContext::new("c"),
    ))
    .unwrap();
    assert_eq!(
        out.result.as_deref(),
        Some(r#"{"sentiment":"neutral","confidence":0.5}"#)
    );
    assert!(
        tool.definition().idempotent,
        "giving the answer again is safe"
    );
}

#[test]
fn the_newest_blueprint_of_a_name_wins_and_the_older_is_not_shown() {
    let activities = Activities::new();
    let mut set = ToolSet::new();
    set.add(activities.bind(&sentiment("old description")).unwrap().0);
    set.add(activities.bind(&sentiment("new description")).unwrap().0);
    let defs = set.definitions();
    assert_eq!(defs.len(), 1);
    assert_eq!(defs[0].description, "new description");
    let combined = request_schema(&defs, None);
    assert_eq!(
        combined["properties"]["calls"]["items"]["description"],
        json!("new description")
    );
}

#[test]
fn unknown_meta_properties_and_missing_descriptions_are_refused_with_pointers() {
    let err = Blueprint::from_value(
        "t",
        &json!({"type": "object", "properties": {"_whatever": {"type": "string"}}}),
    )
    .unwrap_err();
    let pointers: Vec<&str> = err.issues.iter().map(|i| i.pointer.as_str()).collect();
    assert_eq!(pointers, ["/description", "/properties/_whatever"], "{err}");
}

#[test]
fn tenvs_and_variables_are_read_and_never_shown_to_the_model() {
    let b = Blueprint::from_value(
        "search_files",
        &json!({
            "type": "object",
            "description": "Searches uploaded files.",
            "properties": {"query": {"type": "string"}},
            "tenvs": {"type": "object", "properties": {"vectorStoreId": {"type": "string", "description": "Vector store"}}, "required": ["vectorStoreId"]},
            "variables": [{"name": "API_KEY", "type": "secret", "required": true, "description": "Key"}]
        }),
    )
    .unwrap();
    let names: Vec<(&str, bool)> = b
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.required))
        .collect();
    assert_eq!(names, [("API_KEY", true), ("vectorStoreId", true)]);
    let (tool, _) = Activities::new().bind(&b).unwrap();
    let shown = tool.definition().parameters.to_string();
    assert!(
        !shown.contains("tenvs") && !shown.contains("API_KEY"),
        "{shown}"
    );
}

#[test]
fn a_blueprint_naming_an_activity_that_is_not_registered_is_refused() {
    let b = Blueprint::from_value(
        "create_ticket",
        &json!({
            "type": "object",
            "description": "Files a ticket.",
            "properties": {
                "_activity": {"type": "string", "const": "ticket_desk"},
                "title": {"type": "string"}
            }
        }),
    )
    .unwrap();
    let err = Activities::new().bind(&b).unwrap_err();
    assert_eq!(err.issues.len(), 1);
    assert_eq!(err.issues[0].pointer, "/properties/_activity");
    assert!(
        err.issues[0].reason.contains("\"ticket_desk\""),
        "{}",
        err.issues[0].reason
    );
    // Registered, it binds.
    let mut activities = Activities::new();
    activities.register("ticket_desk", |_, _, _| async {
        Ok::<_, ToolError>("filed".to_owned())
    });
    let (_, binding) = activities.bind(&b).unwrap();
    assert_eq!(
        binding,
        Binding::Explicit {
            activity: "ticket_desk".into()
        }
    );
}

/// A contact tool: a phone or an email address, the phone when the method says so.
fn contact(with_dialect: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "description": "Records how to reach someone.",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                              "properties": {"city": {"type": "string"}}}},
        "properties": {
            "_activity": {"const": "record_contact"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    if with_dialect {
        schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    }
    schema
}

#[test]
fn a_blueprint_naming_json_schema_2020_12_may_use_all_of_it_and_every_keyword_is_enforced() {
    let mut activities = Activities::new();
    activities.register("record_contact", |_, _, _| async {
        Ok::<_, ToolError>("recorded".to_owned())
    });
    // Without `$schema`, the subset: the keywords outside it are refused, each with its place.
    let subset = Blueprint::from_value("record_contact", &contact(false)).unwrap();
    let refused = activities.bind(&subset).unwrap_err();
    let pointers: Vec<&str> = refused.issues.iter().map(|i| i.pointer.as_str()).collect();
    assert!(
        pointers.contains(&"/allOf") && pointers.contains(&"/if"),
        "{refused}"
    );

    let general = Blueprint::from_value("record_contact", &contact(true)).unwrap();
    let (tool, _) = activities.bind(&general).unwrap();
    let call = |args: Value| block_on(tool.call(args, ToolContext::new("c")));
    assert!(call(json!({"contactMethod": "email", "email": "ada@example.com"})).is_ok());
    assert!(
        call(json!({"contactMethod": "phone", "phone": "555", "address": {"city": "Oslo"}}))
            .is_ok()
    );
    for (args, why) in [
        (json!({}), "neither a phone nor an email (allOf/anyOf)"),
        (
            json!({"contactMethod": "phone", "email": "a@b"}),
            "the phone method without a phone (if/then)",
        ),
        (json!({"phone": "555"}), "no method and no email (else)"),
        (
            json!({"email": "a@b", "address": {"city": 3}}),
            "a city that is not a string ($ref)",
        ),
        (json!({"email": "a@b", "fax": "1"}), "an unknown property"),
    ] {
        let failed = call(args).unwrap_err();
        assert!(
            matches!(failed, CallFailure::InvalidArguments { .. }),
            "{why}: {failed:?}"
        );
    }
}

#[test]
fn a_blueprint_in_json_schema_2020_12_still_refuses_what_json_schema_does_not_define() {
    let mut schema = contact(true);
    // A misspelt constraint would go unenforced: refused, with its place.
    schema["properties"]["phone"]["maxlength"] = json!(20);
    // A header mark on an object cannot travel in a header: refused as in the subset.
    schema["properties"]["address"] = json!({"type": "object", "x-mcp-header": "Address"});
    // An extension of one's own is kept.
    schema["properties"]["email"]["x-widget"] = json!("email");
    let mut activities = Activities::new();
    activities.register("record_contact", |_, _, _| async {
        Ok::<_, ToolError>("recorded".to_owned())
    });
    let refused = activities
        .bind(&Blueprint::from_value("record_contact", &schema).unwrap())
        .unwrap_err();
    let pointers: Vec<&str> = refused.issues.iter().map(|i| i.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/properties/address/x-mcp-header",
            "/properties/phone/maxlength"
        ],
        "{refused}"
    );
}
