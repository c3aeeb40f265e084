use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "año_vehiculo": {"type": "integer"},
            "filter[id]": {"type": "string"},
            "filter_id_": {"type": "string"},
            "$top": {"type": "integer"},
            "nested": {
                "type": "object",
                "properties": {"$top": {"type": "integer"}, "ok": {"type": "string"}},
                "required": ["$top"]
            },
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"año_vehiculo": {"type": "integer"}}}
            },
            "either": {"anyOf": [
                {"type": "object", "properties": {"a b": {"type": "string"}}},
                {"type": "null"}
            ]},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "ref": {"$ref": "#/$defs/Thing"},
            "again": {"$ref": "#/properties/nested/properties/$top"}
        },
        "required": ["año_vehiculo", "$top"],
        "dependentRequired": {"$top": ["filter[id]"]},
        "$defs": {"Thing": {"type": "object", "properties": {"€uro": {"type": "number"}}}}
    })
}

#[test]
fn refused_keys_are_renamed_at_every_depth_and_accepted_ones_kept() {
    let map = KeyMap::new(Provider::Anthropic, &schema());
    let wire = map.rename_schema(&schema());
    let props = wire["properties"].as_object().unwrap();
    let keys: Vec<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "ano_vehiculo",
            "filter_id__2",
            "filter_id_",
            "_top",
            "nested",
            "rows",
            "either",
            "tags",
            "ref",
            "again"
        ]
    );
    assert_eq!(wire["required"], json!(["ano_vehiculo", "_top"]));
    assert_eq!(wire["dependentRequired"], json!({"_top": ["filter_id__2"]}));
    assert_eq!(wire["properties"]["nested"]["required"], json!(["_top"]));
    assert!(wire["properties"]["nested"]["properties"]["_top"].is_object());
    assert!(wire["properties"]["rows"]["items"]["properties"]["ano_vehiculo"].is_object());
    assert!(wire["properties"]["either"]["anyOf"][0]["properties"]["a_b"].is_object());
    assert!(wire["$defs"]["Thing"]["properties"]["_uro"].is_object());
    assert_eq!(
        wire["properties"]["again"]["$ref"],
        "#/properties/nested/properties/_top"
    );
    // Every key of the declaration is now one the provider takes.
    let mut places = Vec::new();
    collect(&wire, "", &mut places);
    assert!(places
        .iter()
        .all(|(_, k)| key_accepted(Provider::Anthropic, k)));
    // Each renaming is reported where it happens.
    let reported: Vec<(&str, &str)> = map
        .renamings()
        .iter()
        .map(|r| (r.pointer.as_str(), r.wire.as_str()))
        .collect();
    assert!(reported.contains(&("/properties/filter[id]", "filter_id__2")));
    assert!(reported.contains(&("/properties/nested/properties/$top", "_top")));
    assert!(reported.contains(&("/$defs/Thing/properties/€uro", "_uro")));
    // Other providers take every key.
    assert!(KeyMap::new(Provider::OpenAi, &schema()).is_empty());
}

#[test]
fn renaming_is_deterministic_and_long_keys_stay_apart() {
    let long_a = format!("{}a", "k".repeat(70));
    let long_b = format!("{}b", "k".repeat(70));
    let one =
        json!({"type": "object", "properties": {&long_a: {}, &long_b: {}, "x y": {}, "x_y": {}}});
    let other =
        json!({"type": "object", "properties": {"x_y": {}, "x y": {}, &long_b: {}, &long_a: {}}});
    let (m1, m2) = (
        KeyMap::new(Provider::Anthropic, &one),
        KeyMap::new(Provider::Anthropic, &other),
    );
    for key in [long_a.as_str(), long_b.as_str(), "x y"] {
        assert_eq!(m1.wire_key(key), m2.wire_key(key));
        assert!(key_accepted(Provider::Anthropic, m1.wire_key(key)));
    }
    assert_ne!(m1.wire_key(&long_a), m1.wire_key(&long_b));
    assert_eq!(m1.wire_key("x y"), "x_y_2");
    assert_eq!(m1.wire_key("x_y"), "x_y");
}

#[test]
fn arguments_map_back_along_the_schema_and_record_keys_are_data() {
    let map = KeyMap::new(Provider::Anthropic, &schema());
    let original = json!({
        "año_vehiculo": 2019,
        "filter[id]": "7",
        "filter_id_": "kept",
        "nested": {"$top": 3, "ok": "y"},
        "rows": [{"año_vehiculo": 2001}],
        "either": {"a b": "c"},
        // A record's keys are data: even one that looks like a wire key stays as it is.
        "tags": {"_top": "x", "año": "y"},
        "ref": {"€uro": 1.5}
    });
    let wire = map.arguments_to_wire(&schema(), original.clone());
    assert_eq!(wire["ano_vehiculo"], 2019);
    assert_eq!(wire["filter_id__2"], "7");
    assert_eq!(wire["nested"]["_top"], 3);
    assert_eq!(wire["rows"][0]["ano_vehiculo"], 2001);
    assert_eq!(wire["either"]["a_b"], "c");
    assert_eq!(wire["tags"], json!({"_top": "x", "año": "y"}));
    assert_eq!(wire["ref"]["_uro"], 1.5);
    assert_eq!(map.arguments_from_wire(&schema(), wire.clone()), original);
    // Text that does not parse has its quoted wire keys put back for the runtime to mend.
    let broken = r#"{"ano_vehiculo": 2019, "filter_id__2": "ano_vehiculo",}"#.to_owned();
    assert_eq!(
        map.arguments_text_from_wire(&schema(), broken),
        r#"{"año_vehiculo": 2019, "filter[id]": "ano_vehiculo",}"#
    );
}
