//! MCP servers of the command line: `--mcp-config FILE`, the reference
//! CLI's `~/.openhands/mcp.json` and the settings'
//! `agent_settings.mcp_config`, each in the reference's shape (a server map,
//! or `{"mcpServers": {...}}`), checked here — a malformed server is a
//! usage error naming the file, the server and the field — and merged into
//! the agent's `mcp_config` (later sources win per server name).

use crate::error::usage;
use openhands_mcp::config::SERVER_FIELDS;
use openhands_mcp::{McpConfig, UnknownFields};
use serde_json::{Map, Value};
use std::path::Path;

/// The server map of `value` (flat or under `mcpServers`), checked, with
/// fields the reference does not know dropped (as it reads such files);
/// `origin` names the source in errors.
pub fn servers_of(value: &Value, origin: &str) -> anyhow::Result<Map<String, Value>> {
    McpConfig::parse(value, UnknownFields::Drop).map_err(|e| {
        let field = e
            .field
            .as_deref()
            .map(|f| format!(" (field '{f}')"))
            .unwrap_or_default();
        usage(format!("{origin}: {e}{field}"))
    })?;
    let map = match value {
        Value::Object(m) => match m.get("mcpServers") {
            Some(Value::Object(inner)) => inner.clone(),
            Some(_) => Map::new(),
            None => m.clone(),
        },
        _ => Map::new(),
    };
    Ok(map
        .into_iter()
        .map(|(name, server)| {
            let server = match server {
                Value::Object(o) => Value::Object(
                    o.into_iter()
                        .filter(|(k, _)| SERVER_FIELDS.contains(&k.as_str()))
                        .collect(),
                ),
                other => other,
            };
            (name, server)
        })
        .collect())
}

/// The MCP servers of a session: the settings' `agent_settings.mcp_config`,
/// then `~/.openhands/mcp.json` (`openhands mcp add`), then `extra`
/// (`--mcp-config`); a later source wins for a server of the same name.
pub fn configured(
    settings: &crate::settings::Settings,
    extra: Option<&Path>,
) -> anyhow::Result<Map<String, Value>> {
    let mut servers = Map::new();
    if let Some(v) = settings.mcp_config() {
        servers.extend(servers_of(
            v,
            &format!("{} (agent_settings.mcp_config)", settings.path().display()),
        )?);
    }
    let mcp_file = crate::paths::mcp_file();
    if mcp_file.is_file() {
        servers.extend(read_file(&mcp_file)?);
    }
    if let Some(file) = extra {
        servers.extend(read_file(file)?);
    }
    Ok(servers)
}

/// Reads and checks an MCP configuration file; its server map.
pub fn read_file(path: &Path) -> anyhow::Result<Map<String, Value>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read the MCP config file {}: {e}",
            path.display()
        ))
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "the MCP config file {} is not valid JSON: {e}",
            path.display()
        ))
    })?;
    if !value.is_object() {
        return Err(usage(format!(
            "the MCP config file {} must be a JSON object like {{\"mcpServers\": {{...}}}}",
            path.display()
        )));
    }
    servers_of(&value, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;

    #[test]
    fn files_are_checked_naming_server_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = read_file(&missing).unwrap_err();
        assert!(
            as_usage(&e)
                .unwrap()
                .0
                .contains("cannot read the MCP config file")
        );

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{not json").unwrap();
        assert!(
            read_file(&bad)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );

        let no_cmd = dir.path().join("nocmd.json");
        std::fs::write(&no_cmd, r#"{"mcpServers": {"fs": {"args": []}}}"#).unwrap();
        let e = read_file(&no_cmd).unwrap_err().to_string();
        assert!(
            e.contains("MCP server 'fs'") && e.contains("field 'command'"),
            "{e}"
        );

        let ok = dir.path().join("ok.json");
        std::fs::write(
            &ok,
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["x"], "alwaysAllow": []}, "web": {"url": "http://h/mcp"}}}"#,
        )
        .unwrap();
        let m = read_file(&ok).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["fs", "web"]);
        assert!(m["fs"].get("alwaysAllow").is_none());
        assert!(McpConfig::from_agent_map(&m).is_ok());
    }
}
