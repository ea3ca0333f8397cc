use super::*;
use openhands_mcp::McpError;
use parking_lot::Mutex;

/// A client answering from a list of prepared results.
#[derive(Debug, Default)]
struct Fake {
    answers: Mutex<Vec<Result<CallResult, McpError>>>,
    calls: Mutex<Vec<(String, Map<String, Value>)>>,
}

#[async_trait]
impl McpClient for Fake {
    fn tools(&self) -> Vec<openhands_mcp::McpTool> {
        vec![openhands_mcp::McpTool {
            name: "echo".into(),
            server: "s".into(),
            remote_name: "echo".into(),
            description: Some("Echoes".into()),
            input_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            annotations: Some(json!({"readOnlyHint": true, "destructiveHint": false})),
            wire: json!({"name": "echo", "inputSchema": {"type": "object"}}),
        }]
    }
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, McpError> {
        self.calls.lock().push((name.to_string(), arguments));
        self.answers.lock().remove(0)
    }
    async fn close(&self) {}
}

fn tool(fake: Arc<Fake>) -> Arc<dyn Tool> {
    let client: Arc<dyn McpClient> = fake;
    tools_of(&client, &ToolEnv::new("/tmp")).remove(0)
}

#[test]
fn tools_have_the_reference_kinds_schema_and_definition() {
    let t = tool(Arc::new(Fake::default()));
    assert_eq!(
        (t.name(), t.kind(), t.action_kind(), t.observation_kind()),
        ("echo", TOOL_KIND, ACTION_KIND, OBSERVATION_KIND)
    );
    assert!(t.annotations().read_only_hint);
    assert_eq!(t.parameters_schema()["required"], json!(["message"]));
    let d = serde_json::to_value(t.definition()).unwrap();
    assert_eq!(d["kind"], "MCPToolDefinition");
    assert_eq!(d["mcp_tool"]["name"], "echo");
    assert_eq!(d["annotations"]["readOnlyHint"], true);
}

#[test]
fn actions_wrap_arguments_in_data_and_check_required_fields() {
    let t = tool(Arc::new(Fake::default()));
    let a = t
        .parse_action(
            json!({"message": "hi", "extra": null})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        a,
        json!({"data": {"message": "hi"}, "kind": "MCPToolAction"})
    );
    let e = t.parse_action(Map::new()).unwrap_err();
    assert!(
        e.to_string().contains("missing required field(s): message"),
        "{e}"
    );
}

#[tokio::test]
async fn results_become_observations_as_the_reference_writes_them() {
    let fake = Arc::new(Fake::default());
    fake.answers.lock().extend([
        Ok(CallResult {
            content: vec![
                McpContent::Text("Echo: hi".into()),
                McpContent::Image {
                    mime_type: "image/png".into(),
                    data: "AAA=".into(),
                },
                McpContent::Other(json!({"type": "resource"})),
            ],
            is_error: false,
        }),
        Ok(CallResult {
            content: vec![McpContent::Text("bad".into())],
            is_error: true,
        }),
        Err(McpError::Stopped {
            server: "s".into(),
            detail: "gone".into(),
        }),
    ]);
    let t = tool(fake.clone());
    let ctx = ToolCallContext::default();
    let action = json!({"data": {"message": "hi"}, "kind": "MCPToolAction"});
    let ok = t.execute(action.clone(), &ctx).await.unwrap();
    assert_eq!(
        ok,
        json!({
            "content": [
                {"cache_prompt": false, "type": "text", "text": "[Tool 'echo' executed.]"},
                {"cache_prompt": false, "type": "text", "text": "Echo: hi"},
                {"cache_prompt": false, "type": "image", "image_urls": ["data:image/png;base64,AAA="]}
            ],
            "is_error": false,
            "tool_name": "echo",
            "kind": "MCPToolObservation"
        })
    );
    assert_eq!(fake.calls.lock()[0].1["message"], "hi");
    let err = t.execute(action.clone(), &ctx).await.unwrap();
    assert_eq!(err["is_error"], true);
    let llm = t.observation_to_llm(&err);
    assert_eq!(llm[0].as_text(), Some(ERROR_HEADER));
    let stopped = t.execute(action, &ctx).await.unwrap();
    assert_eq!(stopped["is_error"], true);
    let text = stopped["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Error calling MCP tool echo: MCP server 's' stopped"),
        "{text}"
    );
    assert_eq!(t.observation_to_llm(&ok).len(), 3);
}

#[test]
fn malformed_config_is_an_agent_error_naming_the_server() {
    let m = json!({"fs": {"args": []}}).as_object().cloned().unwrap();
    let e = config_of(&m).unwrap_err();
    assert!(e.to_string().contains("MCP server 'fs'"), "{e}");
    let disabled = json!({"fs": {"command": "x", "enabled": false}});
    assert!(config_of(disabled.as_object().unwrap()).unwrap().is_none());
    assert!(config_of(&Map::new()).unwrap().is_none());
}

#[test]
fn filter_tools_regex_applies_to_mcp_tools_but_not_built_ins() {
    let llm = openhands_llm::Llm::new(openhands_wire::LlmConfig::new("openai/m")).unwrap();
    let mut spec = openhands_wire::agent::AgentSpec::new(llm.config().clone(), vec![]);
    let build = |spec: &openhands_wire::agent::AgentSpec| {
        let agent =
            crate::Agent::with_llm(spec.clone(), llm.clone(), crate::tool::ToolRegistry::new());
        let client: Arc<dyn McpClient> = Arc::new(Fake::default());
        let startup = McpStartup {
            client,
            failures: vec![],
        };
        agent
            .materialize_with(&ToolEnv::new("/tmp"), Some(startup))
            .unwrap()
            .tool_names()
            .to_vec()
    };
    let all = build(&spec);
    assert!(
        all.contains(&"echo".to_string()) && all.contains(&"finish".to_string()),
        "{all:?}"
    );
    assert_eq!(all.last().map(String::as_str), Some("echo"));
    spec.filter_tools_regex = Some("ech".into());
    let kept = build(&spec);
    assert!(
        kept.contains(&"echo".to_string()) && kept.contains(&"finish".to_string()),
        "{kept:?}"
    );
    // Anchored at the start, like Python's re.match.
    spec.filter_tools_regex = Some("cho".into());
    let kept = build(&spec);
    assert!(!kept.contains(&"echo".to_string()), "{kept:?}");
    assert!(kept.contains(&"finish".to_string()), "{kept:?}");
}

#[test]
fn schemas_are_simplified_like_the_reference() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "a": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 1}], "description": "A"},
            "b": {"$ref": "#/$defs/Node"},
            "c": {"type": "array", "items": {"type": "integer", "enum": [1, 2]}},
            "d": true
        },
        "required": ["a"],
        "$defs": {"Node": {"type": "object", "description": "N", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
    });
    let defs = schema["$defs"].as_object().cloned().unwrap();
    assert_eq!(
        simplify_schema(&schema, &defs, &[]),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "description": "A"},
                "b": {"type": "object", "description": "N", "properties": {"next": {"type": "object", "description": "N"}}},
                "c": {"type": "array", "items": {"type": "integer", "enum": [1, 2]}},
                "d": {}
            },
            "required": ["a"]
        })
    );
}

#[tokio::test]
async fn secrets_named_in_arguments_are_filled_in_and_masked_in_results() {
    let fake = Arc::new(Fake::default());
    fake.answers.lock().push(Ok(CallResult {
        content: vec![McpContent::Text("got s3cr3t".into())],
        is_error: false,
    }));
    let registry = crate::secrets::SecretsRegistry::new();
    registry.set_value("API_TOKEN", "s3cr3t".into());
    let mut env = ToolEnv::new("/tmp");
    env.secrets = Arc::new(registry);
    let client: Arc<dyn McpClient> = fake.clone();
    let t = tools_of(&client, &env).remove(0);
    let obs = t
        .execute(
            json!({"data": {"message": "token=$API_TOKEN"}, "kind": "MCPToolAction"}),
            &ToolCallContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(fake.calls.lock()[0].1["message"], "token=s3cr3t");
    let text = obs["content"][1]["text"].as_str().unwrap();
    assert!(!text.contains("s3cr3t"), "{text}");
}
