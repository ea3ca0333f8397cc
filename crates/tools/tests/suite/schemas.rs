//! Every tool's parameter schema, once the agent adds `summary` (and, for
//! tools that are not read-only, `security_risk`) the way the reference
//! does, has the reference's structure: property names and order, types,
//! enums, `items` and `required`. Descriptions are our own and only have to
//! be present.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::profile_llm::{ProfileLlmError, ProfileLlms};
use openhands_sdk::route_task::{ClassifyAndSwitchLlmTool, RouteParams};
use openhands_sdk::tool::{Tool, ToolEnv};
use openhands_sdk::vision_inspect::VisionInspectTool;
use openhands_tools::terminal::TerminalTool;
use openhands_tools::{
    ApplyPatchTool, AskOracleTool, EditTool, FileEditorTool, GlobTool, GrepTool, ListDirectoryTool,
    PlanningFileEditorTool, ReadFileTool, TaskTrackerTool, WorkflowTool, WriteFileTool,
};

/// Profiles with one vision profile, for the vision tool to exist.
struct OneVisionProfile;

impl ProfileLlms for OneVisionProfile {
    fn profile_llm(
        &self,
        name: &str,
        _usage_id: &str,
    ) -> Result<openhands_llm::Llm, ProfileLlmError> {
        Err(ProfileLlmError::NotFound(name.to_string()))
    }
    fn record_usage(&self, _llm: &openhands_llm::Llm) {}
    fn vision_profiles(&self) -> Vec<String> {
        vec!["eyes".into()]
    }
    fn latest_user_image_urls(&self) -> Vec<String> {
        Vec::new()
    }
}
use serde_json::{Map, Value, json};

const REFERENCE: &str = include_str!("../fixtures/llm_tool_parameters.json");
/// The browser tools' schemas as the reference sends them (its
/// `to_openai_tool(add_security_risk_prediction=True)`), descriptions
/// replaced.
const BROWSER_REFERENCE: &str = include_str!("../fixtures/browser_tool_parameters.json");
/// The SDK's `inspect_image_with_vision` and `route_task_to_model` as the
/// reference sends them (its tools created with the annotations `create`
/// gives them), descriptions replaced.
const SDK_REFERENCE: &str = include_str!("../fixtures/sdk_tool_parameters.json");

/// The reference schema of `name`.
fn reference(name: &str) -> Value {
    let mut all: Vec<Value> = serde_json::from_str(REFERENCE).unwrap();
    all.extend(serde_json::from_str::<Vec<Value>>(BROWSER_REFERENCE).unwrap());
    all.extend(serde_json::from_str::<Vec<Value>>(SDK_REFERENCE).unwrap());
    all.into_iter()
        .find(|t| t["function"]["name"] == name)
        .map(|t| t["function"]["parameters"].clone())
        .unwrap_or_else(|| panic!("{name} is not in the reference"))
}

/// What the agent sends: `security_risk` (unless read-only) and `summary`
/// first, then the tool's own properties.
fn as_sent(tool: &dyn Tool) -> Value {
    let schema = tool.parameters_schema();
    let mut props = Map::new();
    if !tool.annotations().read_only_hint {
        props.insert(
            "security_risk".into(),
            json!({"type":"string","description":"risk","enum":["UNKNOWN","LOW","MEDIUM","HIGH"]}),
        );
    }
    props.insert(
        "summary".into(),
        json!({"type":"string","description":"summary"}),
    );
    for (k, v) in schema["properties"].as_object().unwrap() {
        assert!(
            !props.contains_key(k),
            "{} must not define `{k}` itself",
            tool.name()
        );
        props.insert(k.clone(), v.clone());
    }
    let mut out = schema.as_object().unwrap().clone();
    out.insert("properties".into(), Value::Object(props));
    Value::Object(out)
}

/// Removes descriptions, checking each property had a non-empty one.
fn strip_descriptions(v: &Value, path: &str) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, val) in m {
                if k == "description" {
                    assert!(
                        val.as_str().is_some_and(|s| !s.trim().is_empty()),
                        "empty description at {path}"
                    );
                    continue;
                }
                out.insert(k.clone(), strip_descriptions(val, &format!("{path}/{k}")));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| strip_descriptions(x, path)).collect()),
        other => other.clone(),
    }
}

/// Every property object must carry a description.
fn assert_described(v: &Value, path: &str) {
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            assert!(
                p.get("description").is_some(),
                "no description at {path}/{k}"
            );
            if let Some(items) = p.get("items") {
                assert_described(items, &format!("{path}/{k}/items"));
            }
        }
    }
}

#[test]
fn schemas_match_reference_structure() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.profile_llms = Some(std::sync::Arc::new(OneVisionProfile));
    let browser = openhands_browser::browser_tool_set(&Map::new(), &env).unwrap();
    assert_eq!(
        browser.len(),
        serde_json::from_str::<Vec<Value>>(BROWSER_REFERENCE)
            .unwrap()
            .len(),
        "every reference browser tool is offered"
    );
    let mut tools: Vec<std::sync::Arc<dyn Tool>> = vec![
        std::sync::Arc::new(TerminalTool::new(&env)),
        std::sync::Arc::new(FileEditorTool::new(&env)),
        std::sync::Arc::new(TaskTrackerTool::new(&env)),
        std::sync::Arc::new(GrepTool::new(&env)),
        std::sync::Arc::new(GlobTool::new(&env)),
        std::sync::Arc::new(ApplyPatchTool::new(&env)),
        std::sync::Arc::new(ReadFileTool::new(&env)),
        std::sync::Arc::new(WriteFileTool::new(&env)),
        std::sync::Arc::new(EditTool::new(&env)),
        std::sync::Arc::new(ListDirectoryTool::new(&env)),
        std::sync::Arc::new(PlanningFileEditorTool::new(&env, None).unwrap()),
        std::sync::Arc::new(AskOracleTool::new(&env)),
        std::sync::Arc::new(WorkflowTool::new(&env)),
        std::sync::Arc::new(VisionInspectTool::create(&env).expect("a vision profile exists")),
        std::sync::Arc::new(ClassifyAndSwitchLlmTool::new(RouteParams::default(), &env)),
    ];
    tools.extend(browser);
    for tool in &tools {
        let ours = as_sent(tool.as_ref());
        assert_described(&ours, tool.name());
        let ours = strip_descriptions(&ours, tool.name());
        // The reference's planning editor takes `FileEditorAction`'s parameters
        // unchanged (checked against its pydantic schema); the captured list
        // has no planning agent, so compare with `file_editor`'s.
        let reference_name = match tool.name() {
            "planning_file_editor" => "file_editor",
            other => other,
        };
        let theirs = strip_descriptions(&reference(reference_name), tool.name());
        // Compare serialized text so key order counts too.
        assert_eq!(
            serde_json::to_string_pretty(&ours).unwrap(),
            serde_json::to_string_pretty(&theirs).unwrap(),
            "schema of {}",
            tool.name()
        );
        assert!(
            tool.description().len() > 200,
            "{} needs a complete description",
            tool.name()
        );
    }
}
