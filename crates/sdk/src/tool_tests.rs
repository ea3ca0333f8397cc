use super::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Sum {
    content: Vec<Content>,
    is_error: bool,
    sum: i64,
}

/// Adds two numbers; refuses negative ones in `validate`; renders the
/// sum as `= n` when `custom_render` is set.
#[derive(Default)]
struct Adder {
    custom_render: bool,
    closed: AtomicBool,
}

impl TypedTool for Adder {
    type Action = Add;
    type Observation = Sum;
    const NAME: &'static str = "add";
    const KIND: &'static str = "AddTool";
    const ACTION_KIND: &'static str = "AddAction";
    const OBSERVATION_KIND: &'static str = "AddObservation";

    fn description(&self) -> String {
        "Adds.".into()
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
    fn validate(&self, action: &Add) -> Result<(), ToolError> {
        if action.a < 0 || action.b < 0 {
            return Err(ToolError::InvalidArguments("no negative numbers".into()));
        }
        Ok(())
    }
    async fn run(&self, action: Add, _ctx: &ToolCallContext) -> Result<Sum, ToolError> {
        let sum = action.a + action.b;
        Ok(Sum {
            content: vec![Content::text(sum.to_string())],
            is_error: false,
            sum,
        })
    }
    fn observation_to_llm(&self, observation: StoredObservation<'_, Sum>) -> Vec<Content> {
        match observation.parse() {
            Some(sum) if self.custom_render => vec![Content::text(format!("= {}", sum.sum))],
            _ => observation.content(),
        }
    }
    async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[tokio::test]
async fn blanket_impl_does_the_json_work() {
    let tool: Arc<dyn Tool> = Arc::new(Adder::default());
    assert_eq!(
        (
            tool.name(),
            tool.kind(),
            tool.action_kind(),
            tool.observation_kind()
        ),
        ("add", "AddTool", "AddAction", "AddObservation")
    );
    let def = tool.definition();
    assert_eq!((def.title.as_str(), def.kind.as_str()), ("add", "AddTool"));
    assert_eq!(def.observation_type.as_deref(), Some("AddObservation"));

    let action = tool.parse_action(args(json!({"a": 2, "b": 3}))).unwrap();
    assert_eq!(
        serde_json::to_string(&action).unwrap(),
        r#"{"a":2,"b":3,"kind":"AddAction"}"#
    );
    let obs = tool
        .execute(action, &ToolCallContext::default())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&obs).unwrap(),
        r#"{"content":[{"cache_prompt":false,"type":"text","text":"5"}],"is_error":false,"sum":5,"kind":"AddObservation"}"#
    );
    assert_eq!(tool.observation_to_llm(&obs), vec![Content::text("5")]);

    tool.close().await;
}

#[test]
fn bad_arguments_name_the_tool_and_validate_runs_after_parsing() {
    let tool = Adder::default();
    let err = Tool::parse_action(&tool, args(json!({"a": 1}))).unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m)
            if m.starts_with("invalid arguments for `add`: missing field `b`")),
        "{err}"
    );
    let err = Tool::parse_action(&tool, args(json!({"a": 1, "b": -1}))).unwrap_err();
    assert_eq!(err.to_string(), "no negative numbers");
}

#[tokio::test]
async fn stored_actions_are_parsed_back_before_running() {
    let tool = Adder::default();
    let ctx = ToolCallContext::default();
    let err = Tool::execute(&tool, json!({"a": 1, "kind": "AddAction"}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments(_)));
    Tool::close(&tool).await;
    assert!(tool.closed.load(Ordering::SeqCst));
}

#[test]
fn rendering_parses_only_on_demand_and_falls_back_to_content() {
    let custom = Adder {
        custom_render: true,
        ..Adder::default()
    };
    let stored = json!({"content": [{"type": "text", "text": "5"}], "is_error": false,
                            "sum": 5, "kind": "AddObservation"});
    assert_eq!(
        custom.observation_to_llm_json(&stored),
        vec![Content::text("= 5")]
    );
    // Written by another version: no `sum`, so the content is shown.
    let foreign = json!({"content": [{"type": "text", "text": "five"}], "kind": "AddObservation"});
    assert_eq!(
        custom.observation_to_llm_json(&foreign),
        vec![Content::text("five")]
    );
}

impl Adder {
    fn observation_to_llm_json(&self, v: &Value) -> Vec<Content> {
        Tool::observation_to_llm(self, v)
    }
}
