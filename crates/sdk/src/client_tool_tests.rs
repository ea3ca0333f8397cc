use super::*;
use serde_json::json;

fn spec(name: &str) -> ClientToolSpec {
    serde_json::from_value(json!({
        "name": name,
        "description": "d",
        "parameters": {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["n"]}
    }))
    .unwrap()
}

#[test]
fn parameters_default_to_an_empty_object_schema_and_must_be_objects() {
    let s: ClientToolSpec =
        serde_json::from_value(json!({"name": "a", "description": "d"})).unwrap();
    assert_eq!(
        Value::Object(s.parameters.clone()),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(s.to_json()["annotations"], Value::Null);
    let bad = ClientToolSpec::new("a", "d")
        .with_parameters(json!({"type": "string"}).as_object().unwrap().clone());
    let e = bad.validate().unwrap_err();
    assert!(
        e.to_string().starts_with(
            "ClientToolSpec.parameters must be an object JSON Schema (got type='string')"
        ),
        "{e}"
    );
    let none = ClientToolSpec::new("a", "d").with_parameters(Map::new());
    assert!(
        none.validate()
            .unwrap_err()
            .to_string()
            .contains("got type=None")
    );
}

#[test]
fn registration_refuses_duplicates_and_collisions_and_is_idempotent() {
    let mut registry = ToolRegistry::new();
    registry.register_instance(std::sync::Arc::new(crate::builtins::ThinkTool));
    let mut tools = vec![ToolSpec::named("terminal")];
    assert_eq!(
        add_client_tools(&mut tools, &[spec("a"), spec("a")], &registry),
        Err(ClientToolError::Duplicate("a".into()))
    );
    assert_eq!(
        add_client_tools(&mut tools, &[spec("terminal")], &registry),
        Err(ClientToolError::Collision("terminal".into()))
    );
    assert_eq!(
        add_client_tools(&mut tools, &[spec("think")], &registry),
        Err(ClientToolError::Collision("think".into()))
    );
    assert_eq!(
        add_client_tools(&mut tools, &[spec("finish")], &registry),
        Err(ClientToolError::Collision("finish".into()))
    );
    add_client_tools(&mut tools, &[spec("a")], &registry).unwrap();
    add_client_tools(&mut tools, &[spec("a")], &registry).unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(ClientToolSpec::from_tool_spec(&tools[1]), Some(spec("a")));
    assert_eq!(ClientToolSpec::from_tool_spec(&tools[0]), None);
}

#[test]
fn arguments_are_validated_against_the_client_schema() {
    let t = ClientTool::new(spec("a")).unwrap();
    let e = t
        .parse_action(json!({"kind": "x"}).as_object().unwrap().clone())
        .unwrap_err();
    assert!(
        e.to_string().contains("\"n\" is a required property"),
        "{e}"
    );
    let e = t
        .parse_action(json!({"n": "x"}).as_object().unwrap().clone())
        .unwrap_err();
    assert!(e.to_string().contains("not of type \"integer\""), "{e}");
    let a = t
        .parse_action(json!({"n": 2}).as_object().unwrap().clone())
        .unwrap();
    assert_eq!(
        a,
        json!({"mcp_arg_kind": null, "n": 2, "kind": "ClientAction_a"})
    );
}

#[tokio::test]
async fn execution_only_acknowledges() {
    let t = ClientTool::new(spec("a")).unwrap();
    let o = t
        .execute(json!({}), &ToolCallContext::default())
        .await
        .unwrap();
    assert_eq!(o["kind"], OBSERVATION_KIND);
    assert_eq!(o["is_error"], false);
    assert_eq!(o["content"][0]["text"], ACKNOWLEDGEMENT);
}
