//! The agent configuration JSON (`{"kind":"Agent", llm, tools, ...}`) that
//! clients send and `base_state.json` stores.

use crate::llm_config::LlmConfig;
use crate::tool::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn d_kind() -> String {
    "Agent".into()
}
fn d_default_tools() -> Vec<String> {
    vec!["FinishTool".into(), "ThinkTool".into()]
}
fn d_system_prompt_filename() -> String {
    "system_prompt.j2".into()
}
fn d_security_policy_filename() -> String {
    "security_policy.j2".into()
}
fn d_concurrency() -> usize {
    1
}

/// Agent configuration (`Agent` in the reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// The LLM.
    pub llm: LlmConfig,
    /// Tools by registered name.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// MCP server configuration (`{"mcpServers": {...}}`).
    #[serde(default)]
    pub mcp_config: Map<String, Value>,
    /// Only tools whose name matches this regex are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_tools_regex: Option<String>,
    /// Built-in tools added after `tools` (`FinishTool`, `ThinkTool`).
    #[serde(default = "d_default_tools")]
    pub include_default_tools: Vec<String>,
    /// Skills, message suffixes, secrets for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_context: Option<Value>,
    /// A complete system prompt replacing the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// System prompt template name.
    #[serde(default = "d_system_prompt_filename")]
    pub system_prompt_filename: String,
    /// Security policy template name.
    #[serde(default = "d_security_policy_filename")]
    pub security_policy_filename: String,
    /// Template variables.
    #[serde(default)]
    pub system_prompt_kwargs: Map<String, Value>,
    /// Condenser configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condenser: Option<Value>,
    /// Critic configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<Value>,
    /// How many tool calls of one response may run at once.
    #[serde(default = "d_concurrency")]
    pub tool_concurrency_limit: usize,
    /// Persona text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// `Agent`.
    #[serde(default = "d_kind")]
    pub kind: String,
    /// Fields of newer peers, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentSpec {
    /// An agent with `llm`, the given tools and default settings.
    pub fn new(llm: LlmConfig, tools: Vec<ToolSpec>) -> Self {
        Self {
            llm,
            tools,
            mcp_config: Map::new(),
            filter_tools_regex: None,
            include_default_tools: d_default_tools(),
            agent_context: None,
            system_prompt: None,
            system_prompt_filename: d_system_prompt_filename(),
            security_policy_filename: d_security_policy_filename(),
            system_prompt_kwargs: Map::new(),
            condenser: None,
            critic: None,
            tool_concurrency_limit: 1,
            persona: None,
            kind: d_kind(),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_agent_json_parses() {
        let j = serde_json::json!({
            "kind": "Agent",
            "llm": {"model": "openai/mock", "api_key": "k", "usage_id": "agent"},
            "tools": [{"name": "terminal", "params": {}}, {"name": "file_editor"}],
            "include_default_tools": ["FinishTool", "ThinkTool"],
            "future_field": 1
        });
        let a: AgentSpec = serde_json::from_value(j).unwrap();
        assert_eq!(a.tools.len(), 2);
        assert_eq!(a.llm.usage_id, "agent");
        assert_eq!(a.tool_concurrency_limit, 1);
        let out = serde_json::to_value(&a).unwrap();
        assert_eq!(out["future_field"], 1);
    }
}
