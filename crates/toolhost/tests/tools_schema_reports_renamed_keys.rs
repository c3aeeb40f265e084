//! `toolhost tools schema --provider anthropic` prints the declarations the adapter sends: a
//! property key Anthropic refuses is renamed there, and each renaming is reported on stderr
//! with where it is. Providers that take any key keep them.

mod common;

use common::{toolhost, TempProject};
use serde_json::{json, Value};

const TOOL: &str = r#"{
  "type": "object",
  "description": "Find vehicles.",
  "properties": {
    "año_vehiculo": {"type": "integer"},
    "filter[id]": {"type": "string"},
    "$top": {"type": "integer"},
    "where": {"type": "object", "properties": {"$top": {"type": "integer"}}}
  },
  "required": ["año_vehiculo"],
  "additionalProperties": false
}"#;

#[test]
fn refused_property_keys_are_renamed_and_reported() {
    let project = TempProject::new();
    project.tool("find_vehicles.json", TOOL);
    let dir = project.root.display().to_string();
    let run = toolhost(&["tools", "schema", &dir, "--provider", "anthropic"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let decls: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let schema = &decls[0]["input_schema"];
    let keys: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ano_vehiculo", "filter_id_", "_top", "where"]);
    assert_eq!(schema["required"], json!(["ano_vehiculo"]));
    assert!(schema["properties"]["where"]["properties"]["_top"].is_object());
    for line in [
        "find_vehicles: anthropic does not accept the property key \"año_vehiculo\" at /properties/año_vehiculo; it is sent as \"ano_vehiculo\" and mapped back",
        "find_vehicles: anthropic does not accept the property key \"filter[id]\" at /properties/filter[id]; it is sent as \"filter_id_\" and mapped back",
        "find_vehicles: anthropic does not accept the property key \"$top\" at /properties/where/properties/$top; it is sent as \"_top\" and mapped back",
    ] {
        assert!(run.stderr.contains(line), "{line}\n{}", run.stderr);
    }

    let openai = toolhost(&["tools", "schema", &dir, "--provider", "openai"]);
    assert_eq!(openai.code, 0, "{}", openai.stderr);
    assert!(!openai.stderr.contains("property key"), "{}", openai.stderr);
    let decls: Vec<Value> = serde_json::from_str(&openai.stdout).unwrap();
    assert!(decls[0]["function"]["parameters"]["properties"]["año_vehiculo"].is_object());
}
