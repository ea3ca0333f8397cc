//! `sub_agent_scope` (the reference's `SubAgentScope`): the parameter of the
//! delegation tools saying whether the sub-agents they offer and start must
//! stay within the delegating agent's tools. MCP servers are not part of
//! it: every sub-agent inherits exactly its parent's (`mcp_servers` is a
//! deprecated, ignored key still accepted so stored parameters load).
//!
//! A scoped delegation tool offers only the agents whose definitions use
//! no tool the parent lacks, refuses to start one whose built agent does,
//! and hands the scope on to the sub-agent's own delegation tools.

use super::definition::AgentDefinition;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The tool parameter's name.
pub const SUB_AGENT_SCOPE_PARAM: &str = "sub_agent_scope";

/// Tools that start sub-agents and take the parameter (the reference's
/// three, plus `task`, under which the task tool is registered here too).
pub const DELEGATION_TOOL_NAMES: [&str; 4] =
    ["task_tool_set", "task", "workflow_tool_set", "workflow"];

/// Tools reaching nothing outside their own conversation: never counted
/// as missing (the reference's `conversation_local` tools).
const CONVERSATION_LOCAL_TOOLS: [&str; 1] = ["task_tracker"];

/// Built-in tools by class name (as `include_default_tools` lists them)
/// and tool name.
const BUILTIN_CLASSES: [(&str, &str); 6] = [
    ("FinishTool", "finish"),
    ("ThinkTool", "think"),
    ("InvokeSkillTool", "invoke_skill"),
    ("SwitchLLMTool", "switch_llm"),
    ("VisionInspectTool", "inspect_image_with_vision"),
    ("ClassifyAndSwitchLLMTool", "classify_and_switch_llm"),
];

/// Why a `sub_agent_scope` parameter is refused (pydantic's wording,
/// naming the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// Not an object.
    #[error("{SUB_AGENT_SCOPE_PARAM}: Input should be a valid dictionary")]
    NotObject,
    /// A known key whose value is not a boolean.
    #[error("{SUB_AGENT_SCOPE_PARAM}.{0}: Input should be a valid boolean")]
    NotBool(String),
    /// A key the scope does not have.
    #[error("{SUB_AGENT_SCOPE_PARAM}.{0}: Extra inputs are not permitted")]
    Extra(String),
}

/// Which of the delegating agent's tools its sub-agents must stay within.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubAgentScope {
    /// Sub-agents may use only tools the delegating agent has.
    pub tools: bool,
}

impl SubAgentScope {
    /// The scope keeping sub-agents within the parent's tools.
    pub const TOOLS: Self = Self { tools: true };

    /// Reads the `sub_agent_scope` parameter of a tool spec's `params`:
    /// absent or `null` is the unrestricted scope; a malformed one is an
    /// error naming the field (as pydantic words it).
    pub fn from_params(params: &Map<String, Value>) -> Result<Self, ScopeError> {
        match params.get(SUB_AGENT_SCOPE_PARAM) {
            None | Some(Value::Null) => Ok(Self::default()),
            Some(v) => Self::from_value(v),
        }
    }

    /// Parses the scope object itself (`{"tools": bool, "mcp_servers": bool}`).
    pub fn from_value(value: &Value) -> Result<Self, ScopeError> {
        let scope = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(m) => m,
            _ => return Err(ScopeError::NotObject),
        };
        let mut out = Self::default();
        for (key, value) in scope {
            match (key.as_str(), value) {
                ("tools", Value::Bool(b)) => out.tools = *b,
                ("mcp_servers", Value::Bool(_)) => {}
                ("tools" | "mcp_servers", _) => return Err(ScopeError::NotBool(key.clone())),
                (_, _) => return Err(ScopeError::Extra(key.clone())),
            }
        }
        Ok(out)
    }

    /// Whether it restricts anything.
    pub fn restricts(&self) -> bool {
        self.tools
    }

    /// The tools `sub_agent` uses that `parent` lacks (sorted), when
    /// scoped; conversation-local tools never count.
    pub fn missing_from(
        &self,
        parent: &BTreeSet<String>,
        sub_agent: &BTreeSet<String>,
    ) -> Vec<String> {
        if !self.tools {
            return Vec::new();
        }
        sub_agent
            .difference(parent)
            .filter(|n| !CONVERSATION_LOCAL_TOOLS.contains(&n.as_str()))
            .cloned()
            .collect()
    }

    /// Whether the agent of `definition` may be offered by a parent with
    /// the tools `parent`.
    pub fn offers(&self, parent: &BTreeSet<String>, definition: &AgentDefinition) -> bool {
        let missing = self.missing_from(parent, &definition_tool_names(definition));
        if !missing.is_empty() {
            tracing::info!(
                agent = %definition.name,
                missing = %missing.join(", "),
                "not offering a sub-agent using tools this agent lacks"
            );
        }
        missing.is_empty()
    }

    /// `tools` with this scope merged into every delegation tool's
    /// `sub_agent_scope` (a scope already there is only ever narrowed).
    pub fn scope_delegation_tools(&self, tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
        if !self.restricts() {
            return tools;
        }
        tools
            .into_iter()
            .map(|mut tool| {
                if DELEGATION_TOOL_NAMES.contains(&canonical_tool_name(&tool.name).as_str()) {
                    let current = Self::from_params(&tool.params).unwrap_or_default();
                    let merged = current.tools || self.tools;
                    tool.params.insert(
                        SUB_AGENT_SCOPE_PARAM.into(),
                        serde_json::json!({ "tools": merged }),
                    );
                }
                tool
            })
            .collect()
    }
}

/// The tool name a spec resolves to: built-in class names collapse to
/// their tool names (`FinishTool` → `finish`).
pub fn canonical_tool_name(name: &str) -> String {
    BUILTIN_CLASSES
        .iter()
        .find(|(class, _)| *class == name)
        .map_or(name, |(_, tool)| tool)
        .to_string()
}

/// The tools an agent uses: its tool specs and its default built-ins.
pub fn agent_tool_names(spec: &AgentSpec) -> BTreeSet<String> {
    spec.tools
        .iter()
        .map(|t| t.name.as_str())
        .chain(spec.include_default_tools.iter().map(String::as_str))
        .map(canonical_tool_name)
        .collect()
}

/// The tools a definition lists.
pub fn definition_tool_names(definition: &AgentDefinition) -> BTreeSet<String> {
    definition
        .tools
        .iter()
        .map(|t| canonical_tool_name(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn shapes_are_validated_by_field() {
        assert_eq!(
            SubAgentScope::from_params(&params(json!({}))),
            Ok(SubAgentScope::default())
        );
        assert_eq!(
            SubAgentScope::from_params(&params(json!({"sub_agent_scope": {"tools": true}}))),
            Ok(SubAgentScope::TOOLS)
        );
        assert_eq!(
            SubAgentScope::from_params(&params(
                json!({"sub_agent_scope": {"tools": false, "mcp_servers": true}})
            )),
            Ok(SubAgentScope::default())
        );
        let e =
            SubAgentScope::from_params(&params(json!({"sub_agent_scope": {"x": 1}}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sub_agent_scope.x: Extra inputs are not permitted"
        );
        let e = SubAgentScope::from_params(&params(json!({"sub_agent_scope": {"tools": "yes"}})))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "sub_agent_scope.tools: Input should be a valid boolean"
        );
        assert!(SubAgentScope::from_params(&params(json!({"sub_agent_scope": 3}))).is_err());
    }

    #[test]
    fn missing_tools_ignore_conversation_local_ones_and_builtin_class_names() {
        let mut spec = AgentSpec::new(Default::default(), vec![ToolSpec::named("terminal")]);
        spec.include_default_tools = vec!["FinishTool".into(), "ThinkTool".into()];
        let parent = agent_tool_names(&spec);
        assert_eq!(parent, names(&["finish", "terminal", "think"]));
        let sub = names(&[
            "terminal",
            "task_tracker",
            "grep",
            "finish",
            "browser_tool_set",
        ]);
        assert_eq!(
            SubAgentScope::TOOLS.missing_from(&parent, &sub),
            vec!["browser_tool_set".to_string(), "grep".to_string()]
        );
        assert!(
            SubAgentScope::default()
                .missing_from(&parent, &sub)
                .is_empty()
        );
    }

    #[test]
    fn delegation_tools_inherit_the_scope() {
        let tools = vec![
            ToolSpec::named("terminal"),
            ToolSpec::named("task_tool_set"),
            ToolSpec {
                name: "workflow".into(),
                params: params(json!({"sub_agent_scope": {"tools": false}, "x": 1})),
            },
        ];
        assert_eq!(
            SubAgentScope::default().scope_delegation_tools(tools.clone()),
            tools
        );
        let scoped = SubAgentScope::TOOLS.scope_delegation_tools(tools);
        assert!(scoped[0].params.is_empty());
        assert_eq!(scoped[1].params["sub_agent_scope"], json!({"tools": true}));
        assert_eq!(scoped[2].params["sub_agent_scope"], json!({"tools": true}));
        assert_eq!(scoped[2].params["x"], json!(1));
    }
}
