//! Tests of the subset check and canonical form.

use super::*;
use crate::schema::MAX_SCHEMA_BYTES;
use serde_json::json;

fn nested(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        schema = json!({"type": "object", "properties": {"x": schema}});
    }
    schema
}

#[test]
fn seven_levels_pass_and_eight_are_refused_at_the_deep_pointer() {
    assert!(canonicalize(&nested(7), true).is_ok());
    let issues = canonicalize(&nested(8), true).unwrap_err();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].pointer, "/properties/x".repeat(7));
    assert!(issues[0].reason.contains("8 levels"), "{issues:?}");
}

#[test]
fn refs_are_inlined_and_defs_removed() {
    let raw = json!({
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P", "description": "where"}},
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}}
    });
    let canon = canonicalize(&raw, true).unwrap();
    assert_eq!(
        canon,
        json!({"type": "object", "properties": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}, "description": "where"}}})
    );
}

#[test]
fn recursive_refs_and_unknown_keywords_are_refused() {
    let raw = json!({
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}, "t": {"type": "string", "allOf": []}},
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}
    });
    let issues = canonicalize(&raw, true).unwrap_err();
    let text = format!("{issues:?}");
    assert!(text.contains("recursive"), "{text}");
    assert!(text.contains("/properties/t/allOf"), "{text}");
}

#[test]
fn root_must_be_an_object() {
    let issues = canonicalize(&json!({"type": "string"}), true).unwrap_err();
    assert_eq!(issues[0].pointer, "/");
}

/// `$defs` where each level uses the one below twice: 2^levels copies when inlined.
fn doubling(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    defs.insert(
        "d0".into(),
        json!({"type": "string", "description": "leaf"}),
    );
    for i in 1..=levels {
        let prev = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": prev}, {"$ref": prev}]}),
        );
    }
    json!({
        "type": "object",
        "properties": {"x": {"$ref": format!("#/$defs/d{levels}")}},
        "$defs": defs
    })
}

#[test]
fn exponential_ref_expansion_is_refused_at_the_outer_ref() {
    assert!(canonicalize(&doubling(4), true).is_ok());
    let issues = canonicalize(&doubling(40), true).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].pointer, "/properties/x/$ref");
    assert!(
        issues[0]
            .reason
            .contains("\"#/$defs/d40\" → \"#/$defs/d39\"")
            && issues[0].reason.contains(&MAX_SCHEMA_BYTES.to_string()),
        "{issues:?}"
    );
}

#[test]
fn a_large_schema_without_refs_is_refused_where_it_passes_the_limit() {
    let values: Vec<String> = (0..MAX_SCHEMA_BYTES / 8)
        .map(|i| format!("v{i:06}"))
        .collect();
    let raw = json!({"type": "object", "properties": {"e": {"type": "string", "enum": values}}});
    let issues = canonicalize(&raw, true).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].pointer, "/properties/e/enum");
}

#[test]
fn unions_nested_past_the_limit_are_refused_not_overflowed() {
    let mut schema = json!({"type": "string"});
    for _ in 0..(crate::schema::MAX_SCHEMA_NESTING + 5) {
        schema = json!({"anyOf": [schema]});
    }
    let raw = json!({"type": "object", "properties": {"u": schema, "v": {"type": "string"}}});
    let issues = canonicalize(&raw, true).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert!(
        issues[0].reason.contains("nest more than 128"),
        "{issues:?}"
    );
}

#[test]
fn a_bad_definition_inlined_many_times_is_reported_once_and_the_list_is_bounded() {
    let mut raw = doubling(12);
    raw["$defs"]["d0"] = json!({"type": "string", "allOf": []});
    let issues = canonicalize(&raw, true).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].pointer, "/$defs/d0/allOf");

    let props: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("p{i}"), json!({"type": "nope"})))
        .collect();
    let issues = canonicalize(&json!({"type": "object", "properties": props}), true).unwrap_err();
    assert_eq!(issues.len(), 51);
    assert!(
        issues[50].reason.contains("only the first 50"),
        "{issues:?}"
    );
}

/// A schema beyond the subset, as MCP servers write them.
fn general() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "address": {"$ref": "#/$defs/address"},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false},
            "tags": {"type": "array", "items": true, "uniqueItems": true},
            "x-vendor": {"type": "string", "x-ui": "hidden"}
        },
        "allOf": [{"if": {"required": ["address"]}, "then": {"required": ["pair"]}}],
        "not": {"required": ["forbidden"]},
        "patternProperties": {"^n_": {"$ref": "#/$defs/n"}},
        "required": ["from_elsewhere"],
        "$defs": {
            "address": {"$anchor": "addr", "type": "object", "properties": {"city": {"type": "string"}}},
            "n": {"type": "number"}
        }
    })
}

#[test]
fn the_subset_refuses_what_a_general_schema_may_say() {
    let issues = canonicalize(&general(), true).unwrap_err();
    let said: Vec<&str> = issues.iter().map(|i| i.pointer.as_str()).collect();
    for place in [
        "/allOf",
        "/not",
        "/patternProperties",
        "/properties/pair/items",
    ] {
        assert!(said.contains(&place), "{place}: {issues:?}");
    }
}

#[test]
fn a_general_schema_keeps_its_keywords_with_refs_inlined_and_tuples_in_2020_12_form() {
    let canon = canonicalize_in(&general(), true, Dialect::General).unwrap();
    assert_eq!(
        canon["properties"]["address"],
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        "$anchor is dropped with the $ref inlined"
    );
    assert_eq!(
        canon["properties"]["pair"],
        json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})
    );
    assert_eq!(canon["properties"]["tags"]["items"], json!(true));
    assert_eq!(canon["properties"]["tags"]["uniqueItems"], json!(true));
    assert_eq!(
        canon["properties"]["x-vendor"]["x-ui"], "hidden",
        "unknown keywords annotate"
    );
    assert_eq!(canon["allOf"][0]["then"], json!({"required": ["pair"]}));
    assert_eq!(canon["not"], json!({"required": ["forbidden"]}));
    assert_eq!(canon["patternProperties"]["^n_"], json!({"type": "number"}));
    assert!(canon.get("$defs").is_none() && canon.get("$schema").is_none());
    // Every keyword is enforced by the compiled schema.
    let compiled = crate::schema::CompiledSchema::compile(canon).unwrap();
    assert!(compiled.is_valid(&json!({"from_elsewhere": 1, "pair": ["a", 1]})));
    for bad in [
        json!({"from_elsewhere": 1, "address": {}}),
        json!({"from_elsewhere": 1, "pair": ["a", 1, 2]}),
        json!({"from_elsewhere": 1, "tags": [1, 1]}),
        json!({"from_elsewhere": 1, "forbidden": 0}),
        json!({"from_elsewhere": 1, "n_x": "text"}),
        json!({}),
    ] {
        assert!(!compiled.is_valid(&bad), "{bad}");
    }
}

#[test]
fn a_general_schema_is_refused_only_where_it_cannot_be_made_self_contained() {
    let raw = json!({
        "type": "object",
        "properties": {
            "a": {"$dynamicRef": "#meta"},
            "b": {"$ref": "https://example.com/schema"},
            "c": {"$ref": "#/$defs/c"},
            "d": {"type": "string", "nullable": true}
        },
        "$defs": {"c": {"type": "object", "properties": {"again": {"$ref": "#/$defs/c"}}}}
    });
    let issues = canonicalize_in(&raw, true, Dialect::General).unwrap_err();
    let said: Vec<&str> = issues.iter().map(|i| i.pointer.as_str()).collect();
    assert_eq!(
        said,
        [
            "/properties/a/$dynamicRef",
            "/properties/b/$ref",
            "/$defs/c/properties/again/$ref",
            "/properties/d/nullable"
        ],
        "{issues:?}"
    );
    let not_object = json!({"type": "array", "items": true});
    assert!(canonicalize_in(&not_object, true, Dialect::General).is_err());
}

#[test]
fn a_header_annotation_marks_a_primitive_property_with_a_header_name() {
    let schema = |prop: Value| json!({"type": "object", "properties": {"p": prop}});
    let kept = canonicalize(
        &schema(json!({"type": "string", "x-mcp-header": "Region"})),
        true,
    )
    .unwrap();
    assert_eq!(kept["properties"]["p"]["x-mcp-header"], "Region");
    for (prop, said) in [
        (
            json!({"type": "object", "x-mcp-header": "Region"}),
            "string, integer or boolean",
        ),
        (
            json!({"type": "string", "x-mcp-header": "Two words"}),
            "must name an HTTP header",
        ),
        (
            json!({"type": "string", "x-mcp-header": ""}),
            "must name an HTTP header",
        ),
        (
            json!({"type": "integer", "x-mcp-header": 7}),
            "must name an HTTP header",
        ),
    ] {
        let issues = canonicalize(&schema(prop.clone()), true).unwrap_err();
        assert!(
            issues
                .iter()
                .any(|i| i.pointer == "/properties/p/x-mcp-header" && i.reason.contains(said)),
            "{prop}: {issues:?}"
        );
    }
}

#[test]
fn a_header_annotation_is_on_a_property_path_and_names_one_header() {
    let nested = json!({"type": "object", "properties": {
        "where": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
        "tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}},
        "zone": {"type": "string", "x-mcp-header": "region"}
    }});
    let issues = canonicalize(&nested, true).unwrap_err();
    let at = |p: &str| {
        issues
            .iter()
            .find(|i| i.pointer == p)
            .map(|i| i.reason.clone())
    };
    assert!(
        at("/properties/where/properties/region/x-mcp-header").is_none(),
        "{issues:?}"
    );
    assert!(at("/properties/tags/items/x-mcp-header")
        .unwrap()
        .contains("through `properties` alone"));
    assert!(at("/properties/zone/x-mcp-header")
        .unwrap()
        .contains("already given"));
}
