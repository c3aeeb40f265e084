//! Reading blueprints: their fields, their meta-properties and what is refused.

use super::*;
use serde_json::json;

fn sentiment() -> Value {
    json!({
        "type": "object",
        "description": "Analyzes text sentiment",
        "properties": {
            "_tool": {"type": "string", "const": "sentiment_analysis"},
            "text": {"type": "string", "description": "Text to analyze"},
            "_output": {"type": "object", "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number"}}}
        },
        "required": ["_tool", "text"]
    })
}

#[test]
fn meta_properties_are_kept_apart_from_arguments() {
    let b = Blueprint::from_value("sentiment_analysis", &sentiment()).unwrap();
    assert_eq!(b.meta.tool.as_deref(), Some("sentiment_analysis"));
    assert!(b.meta.output.is_some());
    assert_eq!(
        b.arguments,
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text to analyze"}}, "required": ["text"]})
    );
}

#[test]
fn annotations_are_hints_kept_apart_and_anything_else_is_refused_with_its_pointer() {
    let mut raw = sentiment();
    raw["annotations"] = json!({"readOnlyHint": true, "openWorldHint": false});
    let b = Blueprint::from_value("sentiment_analysis", &raw).unwrap();
    assert_eq!(
        b.hints,
        ToolHints {
            read_only: Some(true),
            destructive: None,
            open_world: Some(false)
        }
    );
    assert!(b.arguments.get("annotations").is_none());
    for (annotations, pointer, says) in [
        (
            json!({"sideEffects": true}),
            "/annotations/sideEffects",
            "unknown annotation",
        ),
        (
            json!({"idempotentHint": true}),
            "/annotations/idempotentHint",
            "\"idempotent\": true",
        ),
        (
            json!({"readOnlyHint": "yes"}),
            "/annotations/readOnlyHint",
            "true or false",
        ),
        (json!(["readOnlyHint"]), "/annotations", "must be an object"),
    ] {
        raw["annotations"] = annotations;
        let e = Blueprint::from_value("sentiment_analysis", &raw).unwrap_err();
        assert_eq!(e.issues[0].pointer, pointer, "{e}");
        assert!(e.issues[0].reason.contains(says), "{e}");
    }
    // `idempotent` beside them is a boolean too, not a word read as false.
    raw.as_object_mut().unwrap().remove("annotations");
    raw["idempotent"] = json!("yes");
    let e = Blueprint::from_value("sentiment_analysis", &raw).unwrap_err();
    assert_eq!(e.issues[0].pointer, "/idempotent", "{e}");
}

#[test]
fn latent_tools_show_output_and_explicit_ones_do_not() {
    let b = Blueprint::from_value("sentiment_analysis", &sentiment()).unwrap();
    assert_eq!(b.binding(|_| false), Binding::Latent);
    assert!(b.model_parameters(&Binding::Latent)["properties"]
        .get("_output")
        .is_some());
    let bound = b.binding(|name| name == "sentiment_analysis");
    assert_eq!(
        bound,
        Binding::Explicit {
            activity: "sentiment_analysis".into()
        }
    );
    assert!(b.model_parameters(&bound)["properties"]
        .get("_output")
        .is_none());
}

#[test]
fn an_explicit_activity_wins_over_a_registered_name() {
    let mut v = sentiment();
    v["properties"]["_activity"] = json!({"const": "nlp"});
    let b = Blueprint::from_value("sentiment_analysis", &v).unwrap();
    assert_eq!(
        b.binding(|_| true),
        Binding::Explicit {
            activity: "nlp".into()
        }
    );
    v["properties"]["_activity"] = json!({"const": ""});
    let b = Blueprint::from_value("sentiment_analysis", &v).unwrap();
    assert_eq!(b.binding(|_| false), Binding::Latent);
}

#[test]
fn a_tool_name_that_differs_from_the_file_is_refused_at_its_pointer() {
    let err = Blueprint::from_value("other", &sentiment()).unwrap_err();
    assert_eq!(err.issues[0].pointer, "/properties/_tool/const");
    assert!(err.to_string().contains("other.json"), "{err}");
}

#[test]
fn calls_split_meta_from_arguments() {
    let (args, meta) = split_call(json!({"text": "hi", "_reasoningForCall": "why", "_tool": "x"}));
    assert_eq!(args, json!({"text": "hi"}));
    assert_eq!(meta.reasoning_for_call, Some(json!("why")));
    assert_eq!(meta.other.get("_tool"), Some(&json!("x")));
}

#[test]
fn a_fixed_output_path_that_is_no_path_is_refused_at_its_pointer() {
    let mut blueprint = sentiment();
    blueprint["properties"]["_outputPath"] = json!({"const": "report..mood"});
    let err = Blueprint::from_value("sentiment_analysis", &blueprint).unwrap_err();
    assert_eq!(
        err.issues[0].pointer, "/properties/_outputPath/const",
        "{err}"
    );
    assert!(err.issues[0].reason.contains("empty segment"), "{err}");
    blueprint["properties"]["_outputPath"] = json!({"const": "report.mood"});
    let parsed = Blueprint::from_value("sentiment_analysis", &blueprint).unwrap();
    assert_eq!(parsed.meta.output_path.as_deref(), Some("report.mood"));
}
