//! `--mcp-config FILE`: the file is read and checked (the reference's
//! `{"mcpServers": {NAME: {"command": ...} | {"url": ...}}}` shape), then
//! refused, because the agent cannot use MCP servers yet. Accepting the file
//! and running without its tools would mislead the user.

use crate::error::usage;
use serde_json::Value;
use std::path::Path;

/// Reads and checks an MCP configuration file; the server names on success.
pub fn read_servers(path: &Path) -> anyhow::Result<Vec<String>> {
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
    let Some(obj) = value.as_object() else {
        return Err(usage(format!(
            "the MCP config file {} must be a JSON object like {{\"mcpServers\": {{...}}}}",
            path.display()
        )));
    };
    let servers = match obj.get("mcpServers") {
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(usage(format!(
                "`mcpServers` in {} must be an object of servers",
                path.display()
            )));
        }
        None => obj,
    };
    if servers.is_empty() {
        return Err(usage(format!(
            "the MCP config file {} defines no server",
            path.display()
        )));
    }
    for (name, server) in servers {
        let has = |k: &str| {
            server
                .get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        };
        if !has("command") && !has("url") {
            return Err(usage(format!(
                "MCP server '{name}' in {} needs a \"command\" (stdio) or a \"url\" (HTTP/SSE)",
                path.display()
            )));
        }
    }
    Ok(servers.keys().cloned().collect())
}

/// The refusal for configured MCP servers.
pub fn not_supported(origin: &str, servers: &[String]) -> anyhow::Error {
    usage(format!(
        "MCP servers are not supported yet: {origin} defines {} ({}); run without them",
        if servers.len() == 1 {
            "one server"
        } else {
            "servers"
        },
        servers.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;

    #[test]
    fn checks_the_file_before_refusing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = read_servers(&missing).unwrap_err();
        assert!(
            as_usage(&e)
                .unwrap()
                .0
                .contains("cannot read the MCP config file")
        );

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{not json").unwrap();
        assert!(
            read_servers(&bad)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );

        let no_cmd = dir.path().join("nocmd.json");
        std::fs::write(&no_cmd, r#"{"mcpServers": {"fs": {"args": []}}}"#).unwrap();
        assert!(
            read_servers(&no_cmd)
                .unwrap_err()
                .to_string()
                .contains("'fs'")
        );

        let ok = dir.path().join("ok.json");
        std::fs::write(
            &ok,
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["x"]}, "web": {"url": "http://h/mcp"}}}"#,
        )
        .unwrap();
        assert_eq!(read_servers(&ok).unwrap(), vec!["fs", "web"]);
        let refusal = not_supported("ok.json", &["fs".into()]).to_string();
        assert!(refusal.starts_with("MCP servers are not supported yet"));
    }
}
