use super::*;
use serde_json::json;

fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "sources": {"type": "array", "items": {"$ref": "#/$defs/Src"}}},
        "required": ["answer"],
        "additionalProperties": false,
        "$defs": {"Src": {"type": "object", "properties": {"url": {"type": "string"}, "more": {"$ref": "#/$defs/Src"}}, "required": ["url"]}}
    })
}

#[test]
fn unusable_schemas_are_refused_with_the_reference_reasons() {
    let cases = [
        (json!({"type": "string"}), "must describe a JSON object"),
        (json!({"type": "object"}), "must define named properties"),
        (
            json!({"type": "object", "properties": {"a": {}}, "oneOf": [{"required": ["a"]}]}),
            "unsupported top-level keywords",
        ),
        (
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
            "dynamic fields",
        ),
        (
            json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
            "must be named properties",
        ),
        (
            json!({"type": "object", "properties": {"summary": {}}}),
            "are reserved",
        ),
        (json!({"type": 5}), "Invalid response_schema"),
    ];
    for (schema, want) in cases {
        let e = ResponseSchema::new(schema.clone()).unwrap_err();
        assert!(e.0.contains(want), "{schema}: {e}");
    }
}

#[test]
fn merge_expands_references_and_appends_required_fields() {
    let s = ResponseSchema::new(answer_schema()).unwrap();
    let merged = s
        .merge_into(json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}))
        .unwrap();
    assert_eq!(merged["required"], json!(["message", "answer"]));
    assert_eq!(merged["additionalProperties"], false);
    let keys: Vec<&String> = merged["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["message", "answer", "sources"]);
    let src = &merged["properties"]["sources"]["items"];
    assert_eq!(src["properties"]["url"], json!({"type": "string"}));
    assert_eq!(
        src["properties"]["more"],
        json!({"type": "object"}),
        "recursion is cut shallow"
    );
    assert!(!merged.to_string().contains("$ref"));
    let clash = s.merge_into(json!({"type": "object", "properties": {"answer": {}}}));
    assert!(clash.unwrap_err().0.contains("collide"));
}

#[test]
fn split_validates_the_response_part_only() {
    let s = ResponseSchema::new(answer_schema()).unwrap();
    let (own, resp) = s
        .split(
            json!({"message": "m", "answer": 42})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
    assert_eq!(Value::Object(own), json!({"message": "m"}));
    assert_eq!(Value::Object(resp), json!({"answer": 42}));
    let e = s
        .split(
            json!({"message": "m", "answer": "x"})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap_err();
    assert!(
        e.0.starts_with("response_schema validation failed: "),
        "{e}"
    );
    assert!(e.0.contains("\"x\" is not of type \"integer\""), "{e}");
    let e = s
        .split(json!({"message": "m"}).as_object().unwrap().clone())
        .unwrap_err();
    assert!(e.0.contains("\"answer\" is a required property"), "{e}");
}
