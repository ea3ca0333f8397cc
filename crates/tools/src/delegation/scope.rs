//! `sub_agent_scope`, the delegation tools' parameter (the reference's
//! `SubAgentScope`, implemented in `openhands_sdk::subagent::scope`): with
//! `tools: true` the sub-agents a delegating agent offers and starts must
//! use only tools it has itself, and pass the scope on to their own
//! delegation tools. `mcp_servers` is deprecated and ignored (sub-agents
//! always inherit the parent's MCP servers).

use serde_json::{Map, Value};

pub use openhands_sdk::subagent::scope::{
    DELEGATION_TOOL_NAMES, SUB_AGENT_SCOPE_PARAM, ScopeError, SubAgentScope,
};

/// Checks the shape of a delegation tool's `sub_agent_scope` parameter:
/// absent, `null` or a valid scope is fine; anything else is an error
/// naming the field.
pub fn check_sub_agent_scope(params: &Map<String, Value>) -> Result<(), ScopeError> {
    SubAgentScope::from_params(params).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn valid_scopes_pass_and_bad_shapes_name_the_field() {
        assert!(check_sub_agent_scope(&params(json!({}))).is_ok());
        assert!(
            check_sub_agent_scope(&params(json!({"sub_agent_scope": {"tools": true}}))).is_ok()
        );
        let e = check_sub_agent_scope(&params(json!({"sub_agent_scope": {"x": 1}}))).unwrap_err();
        assert!(e.to_string().starts_with("sub_agent_scope.x"), "{e}");
        assert!(check_sub_agent_scope(&params(json!({"sub_agent_scope": 3}))).is_err());
    }
}
