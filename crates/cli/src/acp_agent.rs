//! ACP agents on the command line: `agent_settings.agent_kind: "acp"` in
//! the settings runs the turns in an external ACP server (Claude Code,
//! Codex, Gemini CLI, or `acp_command`), as the reference's
//! `ACPAgentSettings.create_agent` describes the agent; the model, tools
//! and prompts are the ACP server's own.

use crate::error::usage;
use crate::settings::Settings;
use openhands_wire::agent::AgentSpec;
use serde_json::{Map, Value, json};

/// The `ACPAgent` of the settings, checked (a bad field is a usage error
/// naming it, as is a program that is not found).
pub fn spec(settings: &Settings) -> anyhow::Result<AgentSpec> {
    let name = settings.path().display().to_string();
    let bad =
        |field: &str, message: &str| usage(format!("{name}: agent_settings.{field}: {message}"));
    let block = settings.agent_settings().cloned().unwrap_or_default();
    let mut agent = openhands_acp::config::agent_from_settings(&block)
        .map_err(|e| bad(&e.field, &e.message))?;
    let config =
        openhands_acp::AcpAgentConfig::from_agent(&agent).map_err(|e| bad(&e.field, &e.message))?;
    openhands_acp::config::fill_defaults(&mut agent);
    let program = &config.command[0];
    let path = openhands_workspace::exec::env::host_var("PATH");
    let resolved =
        openhands_workspace::exec::which::resolve_program(program.as_ref(), path.as_deref());
    if !std::path::Path::new(&resolved).is_file() {
        return Err(bad(
            "acp_command",
            &format!("the ACP server program '{program}' was not found"),
        ));
    }
    agent.insert(
        "llm".into(),
        json!({"model": openhands_acp::ACP_SENTINEL_MODEL, "usage_id": openhands_acp::ACP_SENTINEL_MODEL}),
    );
    agent.insert("tools".into(), json!([]));
    agent.insert("include_default_tools".into(), json!([]));
    // The command line's own MCP servers are put in by the caller.
    agent.remove("mcp_config");
    serde_json::from_value(Value::Object(agent)).map_err(|e| {
        usage(format!(
            "{name}: agent_settings: not a valid ACP agent: {e}"
        ))
    })
}

/// An ACP server is handed stdio MCP servers only; a remote one is a
/// usage error naming it.
pub fn check_mcp(servers: &Map<String, Value>, settings_name: &str) -> anyhow::Result<()> {
    if let Some((name, _)) = servers
        .iter()
        .find(|(_, s)| s.get("enabled") != Some(&Value::Bool(false)) && s.get("command").is_none())
    {
        return Err(usage(format!(
            "MCP server '{name}': the ACP agent of {settings_name} is handed stdio MCP servers \
             only; disable it with `openhands mcp disable {name}`"
        )));
    }
    Ok(())
}
