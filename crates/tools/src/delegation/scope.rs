//! `sub_agent_scope`, the delegation tools' parameter (the reference's
//! `SubAgentScope`): with `tools: true` the sub-agents a delegating agent
//! offers and starts must use only tools it has itself, and pass the scope
//! on to their own delegation tools. `mcp_servers` is deprecated and
//! ignored there too (sub-agents always inherit the parent's MCP servers).
//!
//! Restricting sub-agents to the parent's tools is not implemented here, so
//! `tools: true` is refused by name rather than silently ignored; the
//! unrestricted default is accepted.

use serde_json::{Map, Value};

/// The tool parameter's name.
pub const SUB_AGENT_SCOPE_PARAM: &str = "sub_agent_scope";

/// Tools taking the parameter (the reference's delegation tools that exist
/// here).
pub const SCOPED_TOOL_NAMES: [&str; 2] = [super::task::TASK_TOOL_SET_NAME, super::task::TASK_NAME];

/// Checks a delegation tool's `sub_agent_scope` parameter: absent, `null`
/// or not restricting is fine; anything else is an error naming the field.
pub fn check_sub_agent_scope(params: &Map<String, Value>) -> Result<(), String> {
    let scope = match params.get(SUB_AGENT_SCOPE_PARAM) {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("sub_agent_scope: Input should be a valid dictionary".into()),
    };
    for (key, value) in scope {
        match key.as_str() {
            "tools" | "mcp_servers" if value.is_boolean() => {}
            "tools" | "mcp_servers" => {
                return Err(format!(
                    "sub_agent_scope.{key}: Input should be a valid boolean"
                ));
            }
            other => {
                return Err(format!(
                    "sub_agent_scope.{other}: Extra inputs are not permitted"
                ));
            }
        }
    }
    if scope.get("tools").and_then(Value::as_bool) == Some(true) {
        return Err("sub_agent_scope.tools: keeping sub-agents within the delegating agent's tools is not supported by this server".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn only_the_unrestricted_scope_is_accepted() {
        assert!(check_sub_agent_scope(&params(json!({}))).is_ok());
        assert!(
            check_sub_agent_scope(&params(
                json!({"sub_agent_scope": {"tools": false, "mcp_servers": true}})
            ))
            .is_ok()
        );
        let e = check_sub_agent_scope(&params(json!({"sub_agent_scope": {"tools": true}})))
            .unwrap_err();
        assert!(e.starts_with("sub_agent_scope.tools"), "{e}");
        assert!(check_sub_agent_scope(&params(json!({"sub_agent_scope": {"x": 1}}))).is_err());
        assert!(check_sub_agent_scope(&params(json!({"sub_agent_scope": 3}))).is_err());
    }
}
