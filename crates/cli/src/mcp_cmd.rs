//! `openhands mcp add|list|get|remove|enable|disable`: the command line's
//! MCP servers in `~/.openhands/mcp.json` (`{"mcpServers": {NAME: ...}}`),
//! written as the reference CLI writes them (`transport`, `enabled`,
//! `headers`/`env`, `auth: "oauth"`) and read by every session (see
//! `crate::mcp`). A change applies to sessions started afterwards.

use crate::error::usage;
use crate::settings::mask;
use openhands_mcp::{McpConfig, UnknownFields};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::ExitCode;

/// Options of `openhands mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: McpAction,
}

/// Transports a server can be added with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// Streamable HTTP.
    Http,
    /// Server-sent events (legacy).
    Sse,
    /// A local command speaking MCP on its standard input and output.
    Stdio,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Stdio => "stdio",
        }
    }
}

/// How a remote server authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMethod {
    /// OAuth 2.1: authorize once with `openhands mcp login NAME` (or when a
    /// session starts on a terminal); the tokens are kept encrypted.
    Oauth,
}

/// Options of `openhands mcp add`.
#[derive(Debug, Clone, clap::Args)]
pub struct AddArgs {
    /// How to reach the server.
    #[arg(long, value_enum)]
    pub transport: Transport,
    /// HTTP header of an http/sse server (`"Name: value"`; repeatable).
    #[arg(long, value_name = "HEADER")]
    pub header: Vec<String>,
    /// Environment variable of a stdio server (`KEY=value`; repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Authentication of an http/sse server.
    #[arg(long, value_enum)]
    pub auth: Option<AuthMethod>,
    /// Add the server enabled (the default).
    #[arg(long, overrides_with = "disabled")]
    pub enabled: bool,
    /// Add the server disabled.
    #[arg(long, overrides_with = "enabled")]
    pub disabled: bool,
    /// Name of the server (its tools are named after it).
    pub name: String,
    /// URL of an http/sse server, or the command of a stdio server.
    pub target: String,
    /// Arguments of a stdio server's command (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `openhands mcp` actions.
#[derive(Debug, clap::Subcommand)]
pub enum McpAction {
    /// Add a server.
    Add(AddArgs),
    /// List the configured servers.
    List,
    /// Show one server.
    Get {
        /// Server name.
        name: String,
    },
    /// Remove a server.
    Remove {
        /// Server name.
        name: String,
    },
    /// Enable a server.
    Enable {
        /// Server name.
        name: String,
    },
    /// Disable a server (kept in the file, not started).
    Disable {
        /// Server name.
        name: String,
    },
    /// Authorize an OAuth server now (again, when it was before): prints
    /// the URL to open and waits for the redirect on a loopback port.
    Login {
        /// Server name.
        name: String,
        /// Only print the URL; do not open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the OAuth tokens of a server.
    Logout {
        /// Server name.
        name: String,
    },
}

/// The file's server map (empty when the file does not exist).
fn load(path: &Path) -> anyhow::Result<Map<String, Value>> {
    if !path.exists() {
        return Ok(Map::new());
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{} is not valid JSON ({e}); fix or remove it",
            path.display()
        ))
    })?;
    match value {
        Value::Object(mut m) => match m.remove("mcpServers") {
            Some(Value::Object(servers)) => Ok(servers),
            None if m.is_empty() => Ok(Map::new()),
            // The flat form (servers at the top level) is read as well.
            None => Ok(m),
            Some(_) => Err(usage(format!(
                "{}: `mcpServers` must be an object",
                path.display()
            ))),
        },
        _ => Err(usage(format!(
            "{} must be a JSON object like {{\"mcpServers\": {{...}}}}",
            path.display()
        ))),
    }
}

/// Checks and writes the server map (owner-only file).
fn save(path: &Path, servers: Map<String, Value>) -> anyhow::Result<()> {
    let value = json!({ "mcpServers": servers });
    McpConfig::parse(&value, UnknownFields::Drop).map_err(|e| {
        let field = e
            .field
            .as_deref()
            .map(|f| format!(" (field '{f}')"))
            .unwrap_or_default();
        usage(format!("{e}{field}"))
    })?;
    if let Some(dir) = path.parent() {
        openhands_sdk::profiles::create_private_dir(dir)
            .map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
    }
    let text = serde_json::to_vec_pretty(&value)?;
    openhands_sdk::profiles::files::write_atomic(path, &text)
        .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    Ok(())
}

fn pairs(
    items: &[String],
    sep: char,
    what: &str,
    example: &str,
) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for item in items {
        let Some((k, v)) = item.split_once(sep) else {
            return Err(usage(format!("invalid {what} '{item}': use {example}")));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(usage(format!("invalid {what} '{item}': the name is empty")));
        }
        out.insert(k.to_string(), Value::String(v.trim().to_string()));
    }
    Ok(out)
}

/// The stored entry of `openhands mcp add`.
pub fn server_entry(a: &AddArgs) -> anyhow::Result<Value> {
    let mut s = Map::new();
    match a.transport {
        Transport::Stdio => {
            if !a.header.is_empty() {
                return Err(usage(
                    "--header is for http/sse servers; a stdio server takes --env",
                ));
            }
            if a.auth.is_some() {
                return Err(usage("--auth is for http/sse servers"));
            }
            s.insert("command".into(), json!(a.target));
            s.insert("args".into(), json!(a.args));
            s.insert(
                "env".into(),
                Value::Object(pairs(&a.env, '=', "environment variable", "KEY=value")?),
            );
        }
        Transport::Http | Transport::Sse => {
            if !a.env.is_empty() {
                return Err(usage(
                    "--env is for stdio servers; an http/sse server takes --header",
                ));
            }
            if !a.args.is_empty() {
                return Err(usage(format!(
                    "unexpected arguments after the URL: {}",
                    a.args.join(" ")
                )));
            }
            if !(a.target.starts_with("http://") || a.target.starts_with("https://")) {
                return Err(usage(format!(
                    "'{}' is not an http(s) URL; a local command needs --transport stdio",
                    a.target
                )));
            }
            s.insert("url".into(), json!(a.target));
            s.insert(
                "headers".into(),
                Value::Object(pairs(&a.header, ':', "header", "'Name: value'")?),
            );
            if a.auth == Some(AuthMethod::Oauth) {
                s.insert("auth".into(), json!("oauth"));
            }
        }
    }
    s.insert("transport".into(), json!(a.transport.as_str()));
    s.insert("enabled".into(), json!(!a.disabled));
    Ok(Value::Object(s))
}

fn sensitive(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "auth",
        "token",
        "key",
        "secret",
        "password",
        "cookie",
        "credential",
        "bearer",
    ]
    .iter()
    .any(|w| n.contains(w))
}

fn describe(name: &str, server: &Value, with_name: bool) -> String {
    let get = |k: &str| server.get(k).and_then(Value::as_str);
    let enabled = server.get("enabled").and_then(Value::as_bool) != Some(false);
    let mut out = String::new();
    if with_name {
        out.push_str(&format!(
            "  {name} [{}]\n",
            if enabled { "enabled" } else { "disabled" }
        ));
    }
    let transport =
        get("transport")
            .or(get("type"))
            .unwrap_or(if server.get("command").is_some() {
                "stdio"
            } else {
                "http"
            });
    out.push_str(&format!("    transport: {transport}\n"));
    if let Some(auth) = server.get("auth").filter(|a| !a.is_null()) {
        let auth = match auth {
            Value::String(s) if s == "oauth" => "oauth".to_string(),
            Value::Object(o) => o
                .get("strategy")
                .and_then(Value::as_str)
                .unwrap_or("custom")
                .to_string(),
            _ => "token".to_string(),
        };
        out.push_str(&format!("    auth: {auth}\n"));
    }
    if let Some(url) = get("url") {
        out.push_str(&format!("    url: {url}\n"));
    }
    if let Some(cmd) = get("command") {
        let args: Vec<&str> = server
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str(&format!("    command: {cmd} {}\n", args.join(" ")).replace(" \n", "\n"));
    }
    for (field, sep) in [("headers", ": "), ("env", "=")] {
        if let Some(m) = server
            .get(field)
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
        {
            out.push_str(&format!("    {field}:\n"));
            for (k, v) in m {
                let v = v.as_str().unwrap_or_default();
                let shown = if sensitive(k) || v.to_ascii_lowercase().starts_with("bearer ") {
                    mask(v)
                } else {
                    v.to_string()
                };
                out.push_str(&format!("      {k}{sep}{shown}\n"));
            }
        }
    }
    out
}

fn not_found(name: &str, path: &Path) -> anyhow::Error {
    usage(format!(
        "no MCP server '{name}' in {}; `openhands mcp list` shows them",
        path.display()
    ))
}

/// Runs `openhands mcp`.
pub async fn mcp(args: McpArgs) -> anyhow::Result<ExitCode> {
    let path = crate::paths::mcp_file();
    match args.action {
        McpAction::Add(a) => {
            let mut servers = load(&path)?;
            if servers.contains_key(&a.name) {
                return Err(usage(format!(
                    "an MCP server '{}' exists already; remove it first with `openhands mcp remove {}`",
                    a.name, a.name
                )));
            }
            servers.insert(a.name.clone(), server_entry(&a)?);
            save(&path, servers)?;
            println!(
                "added MCP server '{}' ({}) to {}",
                a.name,
                if a.disabled { "disabled" } else { "enabled" },
                path.display()
            );
            if a.auth == Some(AuthMethod::Oauth) {
                println!(
                    "authorize it with `openhands mcp login {}` (or when a session starts)",
                    a.name
                );
            }
        }
        McpAction::List => {
            let servers = load(&path)?;
            if servers.is_empty() {
                println!(
                    "no MCP servers configured; add one with `openhands mcp add` (they are kept in {})",
                    path.display()
                );
            } else {
                println!("MCP servers in {} ({}):", path.display(), servers.len());
                for (name, server) in &servers {
                    print!("{}", describe(name, server, true));
                }
            }
        }
        McpAction::Get { name } => {
            let servers = load(&path)?;
            let server = servers.get(&name).ok_or_else(|| not_found(&name, &path))?;
            println!("MCP server '{name}':");
            print!("{}", describe(&name, server, false));
        }
        McpAction::Remove { name } => {
            let mut servers = load(&path)?;
            if servers.remove(&name).is_none() {
                return Err(not_found(&name, &path));
            }
            save(&path, servers)?;
            println!("removed MCP server '{name}'; sessions started from now on do not use it");
        }
        McpAction::Login { name, no_browser } => {
            let settings = crate::settings::Settings::load(&crate::paths::settings_file())?;
            let servers = crate::mcp::configured(&settings, None)?;
            crate::mcp_auth::login(&name, &servers, !no_browser).await?;
        }
        McpAction::Logout { name } => {
            let settings = crate::settings::Settings::load(&crate::paths::settings_file())?;
            let servers = crate::mcp::configured(&settings, None)?;
            crate::mcp_auth::logout(&name, &servers)?;
        }
        McpAction::Enable { name } => set_enabled(&path, &name, true)?,
        McpAction::Disable { name } => set_enabled(&path, &name, false)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn set_enabled(path: &Path, name: &str, on: bool) -> anyhow::Result<()> {
    let mut servers = load(path)?;
    let Some(Value::Object(server)) = servers.get_mut(name) else {
        return Err(not_found(name, path));
    };
    server.insert("enabled".into(), json!(on));
    save(path, servers)?;
    println!(
        "{} MCP server '{name}'; sessions started from now on {} it",
        if on { "enabled" } else { "disabled" },
        if on { "use" } else { "do not use" }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;

    fn add(transport: Transport, target: &str) -> AddArgs {
        AddArgs {
            transport,
            header: Vec::new(),
            env: Vec::new(),
            auth: None,
            enabled: false,
            disabled: false,
            name: "s".into(),
            target: target.into(),
            args: Vec::new(),
        }
    }

    #[test]
    fn entries_have_the_reference_shape() {
        let mut a = add(Transport::Stdio, "python");
        a.args = vec!["-m".into(), "srv".into()];
        a.env = vec!["API_KEY=abc=def".into()];
        assert_eq!(
            server_entry(&a).unwrap(),
            json!({"command": "python", "args": ["-m", "srv"], "env": {"API_KEY": "abc=def"},
                   "transport": "stdio", "enabled": true})
        );
        let mut h = add(Transport::Http, "https://h/mcp");
        h.header = vec!["Authorization: Bearer t:1".into()];
        h.auth = Some(AuthMethod::Oauth);
        h.disabled = true;
        assert_eq!(
            server_entry(&h).unwrap(),
            json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer t:1"},
                   "auth": "oauth", "transport": "http", "enabled": false})
        );
        let mut bad = add(Transport::Http, "https://h");
        bad.header = vec!["no colon".into()];
        let e = server_entry(&bad).unwrap_err();
        assert!(as_usage(&e).unwrap().0.contains("invalid header"), "{e}");
        assert!(server_entry(&add(Transport::Sse, "python")).is_err());
        let mut env_on_http = add(Transport::Http, "https://h");
        env_on_http.env = vec!["A=b".into()];
        assert!(server_entry(&env_on_http).is_err());
    }

    #[test]
    fn the_file_round_trips_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        assert!(load(&path).unwrap().is_empty());
        let mut servers = Map::new();
        servers.insert(
            "s".into(),
            server_entry(&add(Transport::Http, "http://h/mcp")).unwrap(),
        );
        save(&path, servers).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back["s"]["url"], "http://h/mcp");
        std::fs::write(&path, "[1]").unwrap();
        assert!(load(&path).is_err());
        std::fs::write(&path, r#"{"flat": {"command": "x"}}"#).unwrap();
        assert_eq!(load(&path).unwrap()["flat"]["command"], "x");
        let text = describe(
            "s",
            &json!({"url": "u", "headers": {"X-Api-Key": "supersecretvalue", "Accept": "json"}}),
            true,
        );
        assert!(!text.contains("supersecretvalue"), "{text}");
        assert!(text.contains("Accept: json"), "{text}");
        assert!(text.contains("[enabled]"), "{text}");
    }
}
