//! One test per rung, and properties: valid JSON and fitting values are never changed.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn fixed(text: &str) -> (Value, Vec<String>) {
    let r = repair_json(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    (r.value, r.notes)
}

#[test]
fn valid_json_is_left_alone() {
    assert_eq!(
        fixed(r#"{"a": [1, "x"]}"#),
        (json!({"a": [1, "x"]}), vec![])
    );
}

#[test]
fn blank_text_is_an_empty_object() {
    assert_eq!(fixed("  ").0, json!({}));
}

#[test]
fn code_fences_are_stripped() {
    let (v, notes) = fixed("```json\n{\"city\": \"Oslo\"}\n```");
    assert_eq!(v, json!({"city": "Oslo"}));
    assert_eq!(
        notes,
        ["a Markdown code fence around the arguments was removed"]
    );
    assert_eq!(
        fixed("Sure:\n```\n{\"a\": 1}\n```\nDone.").0,
        json!({"a": 1})
    );
}

#[test]
fn trailing_commas_are_removed() {
    let (v, notes) = fixed(r#"{"a": [1, 2,], "b": 3,}"#);
    assert_eq!(v, json!({"a": [1, 2], "b": 3}));
    assert_eq!(notes, ["2 trailing comma(s) were removed"]);
}

#[test]
fn single_quotes_become_double() {
    let (v, notes) = fixed(r#"{'name': 'O\'Brien', 'say': 'he said "hi"'}"#);
    assert_eq!(v, json!({"name": "O'Brien", "say": "he said \"hi\""}));
    assert_eq!(
        notes,
        ["single-quoted strings were changed to double-quoted"]
    );
}

#[test]
fn python_literals_and_bare_keys_are_fixed() {
    let (v, notes) = fixed("{ok: True, missing: None, bad: False}");
    assert_eq!(v, json!({"ok": true, "missing": null, "bad": false}));
    assert_eq!(
        notes,
        [
            "unquoted property names were quoted",
            "Python literals (True, False, None) were changed to JSON's"
        ]
    );
}

#[test]
fn raw_line_breaks_in_strings_are_escaped() {
    let (v, _) = fixed("{\"code\": \"a\nb\tc\"}");
    assert_eq!(v, json!({"code": "a\nb\tc"}));
}

#[test]
fn cut_off_json_is_closed() {
    let (v, notes) = fixed(r#"{"a": {"b": [1, 2"#);
    assert_eq!(v, json!({"a": {"b": [1, 2]}}));
    assert_eq!(
        notes,
        ["3 unclosed bracket(s) were closed (the JSON was cut off or unbalanced)"]
    );
    assert_eq!(
        fixed(r#"{"text": "unfinished"#).0,
        json!({"text": "unfinished"})
    );
    assert_eq!(fixed(r#"{"a": 1, "b":"#).0, json!({"a": 1, "b": null}));
    assert_eq!(fixed(r#"{"a": [1, 2}"#).0, json!({"a": [1, 2]}));
}

#[test]
fn prose_around_the_json_is_ignored() {
    let (v, notes) = fixed(r#"Here you go: {"a": 1} hope that helps"#);
    assert_eq!(v, json!({"a": 1}));
    assert_eq!(
        notes,
        [
            "text before the JSON was ignored",
            "text after the JSON was ignored"
        ]
    );
}

#[test]
fn double_encoded_arguments_are_decoded() {
    let (v, notes) = fixed(r#""{\"city\": \"Oslo\"}""#);
    assert_eq!(v, json!({"city": "Oslo"}));
    assert_eq!(
        notes,
        ["the arguments were a JSON string holding JSON; it was decoded"]
    );
    // A plain string stays a string (validation then says it is not an object).
    assert_eq!(fixed(r#""Oslo""#).0, json!("Oslo"));
}

#[test]
fn hopeless_text_is_an_error_with_the_notes_tried() {
    let e = repair_json("{\"a\": tru").unwrap_err();
    assert!(e
        .to_string()
        .starts_with("the arguments are not valid JSON even after repair"));
    assert!(!e.notes.is_empty());
}

#[test]
fn integers_past_64_bits_are_never_repaired_into_other_numbers() {
    let big = "123456789012345678901234567890";
    for text in [
        format!("{{\"count\": {big}}}"),
        format!("```json\n{{\"count\": {big}}}\n```"),
        format!("{{'count': {big},}}"),
        format!("{{\"count\": {big}"),
    ] {
        let e = repair_json(&text).unwrap_err();
        assert!(
            e.reason.contains(&format!(
                "at /count: the integer {big} does not fit in 64 bits"
            )),
            "{text}: {e}"
        );
    }
    let r = coerce_to_schema(
        json!({"ratio": big, "opts": format!("{{\"deep\": {big}}}")}),
        &schema(),
    );
    assert_eq!(
        r.value,
        json!({"ratio": big, "opts": format!("{{\"deep\": {big}}}")})
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "maybe": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"deep": {"type": "integer"}}},
            "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "name": {"type": "string"}
        }
    })
}

#[test]
fn unambiguous_coercions_are_made_and_noted() {
    let args = json!({
        "count": "3", "ratio": "2.5", "flag": "TRUE", "maybe": "7",
        "tags": "solo", "opts": "{\"deep\": \"4\"}", "name": "12"
    });
    let r = coerce_to_schema(args, &schema());
    assert_eq!(
        r.value,
        json!({
            "count": 3, "ratio": 2.5, "flag": true, "maybe": 7,
            "tags": ["solo"], "opts": {"deep": 4}, "name": "12"
        })
    );
    assert!(
        r.notes
            .contains(&"at /count: \"3\" became 3 (the schema asks for an integer)".to_owned()),
        "{:?}",
        r.notes
    );
    assert_eq!(r.notes.len(), 7, "{:?}", r.notes);
}

#[test]
fn doubtful_values_are_left_for_validation() {
    let args =
        json!({"count": "three", "flag": "yes", "either": "1", "tags": 5, "ratio": "1e400x"});
    let r = coerce_to_schema(args.clone(), &schema());
    assert_eq!(r.value, args);
    assert!(r.notes.is_empty());
}

#[test]
fn the_whole_ladder_runs_syntax_then_coercion() {
    let r = repair_arguments("```json\n{'count': '3',}\n```", &schema()).expect("repaired");
    assert_eq!(r.value, json!({"count": 3}));
    assert_eq!(r.notes.len(), 4, "{:?}", r.notes);
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e9f64..1.0e9).prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::String),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_'\" ]{1,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A schema every part of `value` fits, built from the value itself.
fn schema_of(value: &Value) -> Value {
    match value {
        Value::Null => json!({"type": "null"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::String(_) => json!({"type": "string"}),
        Value::Array(items) => match items.first() {
            Some(first) => json!({"type": "array", "items": schema_of(first)}),
            None => json!({"type": "array"}),
        },
        Value::Object(map) => json!({
            "type": "object",
            "properties": map.iter().map(|(k, v)| (k.clone(), schema_of(v))).collect::<Map<_, _>>()
        }),
    }
}

proptest! {
    #[test]
    fn syntax_repair_never_changes_valid_json(value in any_json()) {
        let nested_json = value.as_str().is_some_and(|s| {
            let t = s.trim();
            (t.starts_with('{') || t.starts_with('[')) && repair_json(t).is_ok()
        });
        prop_assume!(!nested_json);
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap_or_default()] {
            let r = repair_json(&text).expect("valid JSON repairs");
            prop_assert_eq!(&r.value, &value);
            prop_assert!(r.notes.is_empty());
        }
    }

    #[test]
    fn coercion_never_changes_a_fitting_value(value in any_json()) {
        // Arrays of mixed items would not fit a schema built from their first item.
        fn uniform(v: &Value) -> bool {
            match v {
                Value::Array(items) => items.iter().all(|i| {
                    std::mem::discriminant(i) == std::mem::discriminant(&items[0]) && uniform(i)
                }) && items.iter().all(|i| !i.is_array() && !i.is_object()),
                Value::Object(map) => map.values().all(uniform),
                _ => true,
            }
        }
        prop_assume!(uniform(&value));
        let r = coerce_to_schema(value.clone(), &schema_of(&value));
        prop_assert_eq!(r.value, value);
        prop_assert!(r.notes.is_empty());
    }
}
