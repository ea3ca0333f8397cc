//! MCP server configuration in the reference's format: a map of servers
//! (`{"name": {...}}`, or the Claude/FastMCP file shape
//! `{"mcpServers": {"name": {...}}}`), each either a stdio server
//! (`command`, `args`, `env`, `cwd`) or a remote one (`url`, `transport`,
//! `headers`, `auth`). A malformed entry is a [`ConfigError`] naming the
//! server and the field.

use base64::Engine;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// Why an MCP configuration was refused: which server, which field, what
/// is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server '{server}': {message}")]
pub struct ConfigError {
    /// The server's name (empty when the configuration as a whole is wrong).
    pub server: String,
    /// The offending field of that server, when one is to blame.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn new(server: &str, field: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            server: server.to_string(),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its standard input and output.
    Stdio {
        /// Program to run (resolved on the child's `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the child's (policy-filtered) environment.
        env: BTreeMap<String, String>,
        /// Working directory; relative paths resolve against the workspace.
        cwd: Option<String>,
    },
    /// Streamable HTTP (`transport` `http`, `streamable-http` or `shttp`).
    Http {
        /// Endpoint URL.
        url: String,
        /// Headers sent with every request (auth already folded in).
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (`transport: "sse"`, or a URL whose
    /// path has an `/sse` segment).
    Sse {
        /// Event stream URL.
        url: String,
        /// Headers sent with every request (auth already folded in).
        headers: BTreeMap<String, String>,
    },
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The server's name (its key in the map).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Whether the agent uses it (`enabled`, default true).
    pub enabled: bool,
    /// Per-call timeout (`timeout`, seconds), when set.
    pub timeout: Option<Duration>,
    /// OAuth 2.1 (`auth.strategy: "oauth2"`, or FastMCP's `auth: "oauth"`)
    /// of a remote server.
    pub oauth: Option<crate::oauth::OAuthConfig>,
}

/// A parsed MCP configuration: servers in the order written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// The servers.
    pub servers: Vec<ServerConfig>,
}

/// How unknown server fields are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownFields {
    /// Refused, like the reference's `agent.mcp_config` (`extra="forbid"`).
    Refuse,
    /// Dropped, like the reference's reading of external config files.
    Drop,
}

/// The fields a server entry may have.
pub const SERVER_FIELDS: &[&str] = &[
    "url",
    "transport",
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "description",
    "icon",
    "timeout",
    "sse_read_timeout",
    "keep_alive",
    "headers",
    "auth",
    "enabled",
];

impl McpConfig {
    /// Parses `value`: a server map, or an object with an `mcpServers` map.
    pub fn parse(value: &Value, unknown: UnknownFields) -> Result<Self, ConfigError> {
        let servers = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(m) => server_map(m)?,
            _ => {
                return Err(ConfigError::new(
                    "",
                    None,
                    "the MCP configuration must be an object of servers",
                ));
            }
        };
        let mut out = Vec::new();
        for (name, server) in servers {
            out.push(parse_server(name, server, unknown)?);
        }
        Ok(Self { servers: out })
    }

    /// Parses an agent's `mcp_config` map (unknown fields refused).
    pub fn from_agent_map(map: &Map<String, Value>) -> Result<Self, ConfigError> {
        Self::parse(&Value::Object(map.clone()), UnknownFields::Refuse)
    }

    /// The servers the agent uses (`enabled`).
    pub fn enabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| s.enabled)
    }

    /// Whether no server is enabled.
    pub fn is_empty(&self) -> bool {
        self.enabled().next().is_none()
    }
}

fn server_map(m: &Map<String, Value>) -> Result<&Map<String, Value>, ConfigError> {
    match m.get("mcpServers") {
        None => Ok(m),
        Some(Value::Object(inner)) => Ok(inner),
        Some(Value::Null) => Ok(empty_map()),
        Some(_) => Err(ConfigError::new(
            "",
            Some("mcpServers"),
            "`mcpServers` must be an object of servers",
        )),
    }
}

fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

fn parse_server(
    name: &str,
    raw: &Value,
    unknown: UnknownFields,
) -> Result<ServerConfig, ConfigError> {
    let err = |field: Option<&str>, msg: String| ConfigError::new(name, field, msg);
    if name.trim().is_empty() {
        return Err(err(None, "a server name must not be empty".into()));
    }
    let Value::Object(o) = raw else {
        return Err(err(None, "the server must be an object".into()));
    };
    if unknown == UnknownFields::Refuse
        && let Some(k) = o.keys().find(|k| !SERVER_FIELDS.contains(&k.as_str()))
    {
        return Err(err(Some(k), format!("unknown field '{k}'")));
    }
    let s = Fields { name, o };
    let transport = match (s.opt_str("transport")?, s.opt_str("type")?) {
        (Some(t), _) | (None, Some(t)) => Some(t),
        (None, None) => None,
    };
    let field_of_transport = if o.contains_key("transport") {
        "transport"
    } else {
        "type"
    };
    let transport = match transport.as_deref() {
        None => None,
        Some("stdio") => Some(Kind::Stdio),
        Some("http" | "streamable-http" | "shttp") => Some(Kind::Http),
        Some("sse") => Some(Kind::Sse),
        Some(other) => {
            return Err(err(
                Some(field_of_transport),
                format!(
                    "unknown transport '{other}' (expected one of: stdio, http, streamable-http, sse)"
                ),
            ));
        }
    };
    let command = s.opt_str("command")?;
    let url = s.opt_str("url")?;
    if command.as_deref() == Some("") {
        return Err(err(Some("command"), "'command' must not be empty".into()));
    }
    if url.as_deref() == Some("") {
        return Err(err(Some("url"), "'url' must not be empty".into()));
    }
    let kind = match (transport, &command, &url) {
        (Some(Kind::Stdio), None, _) => {
            return Err(err(
                Some("command"),
                "stdio MCP servers require 'command'".into(),
            ));
        }
        (Some(Kind::Http | Kind::Sse), _, None) => {
            return Err(err(Some("url"), "remote MCP servers require 'url'".into()));
        }
        (Some(k), _, _) => k,
        (None, Some(_), _) => Kind::Stdio,
        (None, None, Some(u)) => infer_remote(u),
        (None, None, None) => {
            return Err(err(
                Some("command"),
                "needs 'command' (a stdio server) or 'url' (a remote server)".into(),
            ));
        }
    };
    let enabled = match o.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err(Some("enabled"), "'enabled' must be a boolean".into())),
    };
    let timeout = match o.get("timeout") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(t) if t > 0.0 && t.is_finite() => Some(Duration::from_secs_f64(t)),
            _ => {
                return Err(err(
                    Some("timeout"),
                    "'timeout' must be a positive number of seconds".into(),
                ));
            }
        },
    };
    for f in ["sse_read_timeout"] {
        if let Some(v) = o.get(f).filter(|v| !v.is_null())
            && v.as_f64().is_none()
        {
            return Err(err(Some(f), format!("'{f}' must be a number")));
        }
    }
    if let Some(v) = o.get("keep_alive").filter(|v| !v.is_null())
        && !v.is_boolean()
    {
        return Err(err(
            Some("keep_alive"),
            "'keep_alive' must be a boolean".into(),
        ));
    }
    s.opt_str("description")?;
    s.opt_str("icon")?;
    let mut oauth = None;
    let transport = match kind {
        Kind::Stdio => Transport::Stdio {
            command: command.unwrap_or_default(),
            args: s.str_list("args")?,
            env: s.str_map("env")?,
            cwd: s.opt_str("cwd")?,
        },
        Kind::Http | Kind::Sse => {
            let mut headers = s.str_map("headers")?;
            let (auth_headers, parsed_oauth) = match parse_auth(name, o.get("auth"))? {
                Auth::Headers(h) => (h, None),
                Auth::OAuth(c) => (BTreeMap::new(), Some(c)),
            };
            oauth = parsed_oauth;
            if !auth_headers.is_empty()
                && headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("authorization"))
                && o.get("auth").is_some_and(|a| !a.is_null())
            {
                return Err(err(
                    Some("auth"),
                    "'auth' cannot be combined with an explicit 'Authorization' header; \
                     use auth.strategy='header' instead"
                        .into(),
                ));
            }
            headers.extend(auth_headers);
            let url = url.unwrap_or_default();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(Some("url"), format!("'{url}' is not an http(s) URL")));
            }
            if kind == Kind::Sse {
                Transport::Sse { url, headers }
            } else {
                Transport::Http { url, headers }
            }
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        timeout,
        oauth,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

/// FastMCP's inference: a URL path with an `/sse` segment is SSE.
fn infer_remote(url: &str) -> Kind {
    let path = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    let path = path.split(['?', '#']).next().unwrap_or("");
    if path.split('/').any(|seg| seg == "sse") {
        Kind::Sse
    } else {
        Kind::Http
    }
}

/// What an `auth` credential amounts to.
enum Auth {
    /// Headers sent with every request.
    Headers(BTreeMap<String, String>),
    /// OAuth 2.1.
    OAuth(crate::oauth::OAuthConfig),
}

/// An `auth` credential (the reference's strategies).
fn parse_auth(name: &str, auth: Option<&Value>) -> Result<Auth, ConfigError> {
    let err = |msg: String| ConfigError::new(name, Some("auth"), msg);
    let mut out = BTreeMap::new();
    let o = match auth {
        None | Some(Value::Null) => return Ok(Auth::Headers(out)),
        // FastMCP's plain forms: "oauth", or a bearer token.
        Some(Value::String(token)) => {
            if token == "oauth" {
                return Ok(Auth::OAuth(crate::oauth::OAuthConfig::default()));
            }
            out.insert("Authorization".into(), format!("Bearer {token}"));
            return Ok(Auth::Headers(out));
        }
        Some(Value::Object(o)) => o,
        Some(_) => return Err(err("'auth' must be an object with a 'strategy'".into())),
    };
    let text = |k: &str| -> Result<Option<String>, ConfigError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(err(format!("auth.{k} must be a string"))),
        }
    };
    match o.get("strategy").and_then(Value::as_str) {
        Some("none") => {}
        Some("bearer") => {
            if let Some(v) = text("value")?.filter(|v| !v.is_empty()) {
                out.insert("Authorization".into(), format!("Bearer {v}"));
            }
        }
        Some("api_key") => {
            if let Some(v) = text("value")?.filter(|v| !v.is_empty()) {
                match text("header_name")?.filter(|h| !h.is_empty()) {
                    Some(h) => out.insert(h, v),
                    None => out.insert("Authorization".into(), format!("Bearer {v}")),
                };
            }
        }
        Some("basic") => {
            let user = text("username")?
                .ok_or_else(|| err("auth.username is required for strategy 'basic'".into()))?;
            if let Some(pw) = text("password")? {
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
                out.insert("Authorization".into(), format!("Basic {token}"));
            }
        }
        Some("header") => match o.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(h)) => {
                for (k, v) in h {
                    let Some(v) = v.as_str() else {
                        return Err(err(format!("auth.headers.{k} must be a string")));
                    };
                    out.insert(k.clone(), v.to_string());
                }
            }
            Some(_) => return Err(err("auth.headers must be an object".into())),
        },
        Some("oauth2") => {
            return crate::oauth::OAuthConfig::parse(o)
                .map(Auth::OAuth)
                .map_err(|(field, msg)| ConfigError::new(name, Some(&field), msg));
        }
        Some(other) => {
            return Err(err(format!(
                "unknown auth.strategy '{other}' (expected one of: none, api_key, bearer, basic, header, oauth2)"
            )));
        }
        None => return Err(err("auth.strategy is required".into())),
    }
    Ok(Auth::Headers(out))
}

struct Fields<'a> {
    name: &'a str,
    o: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn err(&self, field: &str, msg: String) -> ConfigError {
        ConfigError::new(self.name, Some(field), msg)
    }

    fn opt_str(&self, k: &str) -> Result<Option<String>, ConfigError> {
        match self.o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err(k, format!("'{k}' must be a string"))),
        }
    }

    fn str_list(&self, k: &str) -> Result<Vec<String>, ConfigError> {
        match self.o.get(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.err(k, format!("'{k}[{i}]' must be a string")))
                })
                .collect(),
            Some(_) => Err(self.err(k, format!("'{k}' must be a list of strings"))),
        }
    }

    fn str_map(&self, k: &str) -> Result<BTreeMap<String, String>, ConfigError> {
        match self.o.get(k) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(name, v)| match v {
                    Value::String(s) => Ok((name.clone(), s.clone())),
                    _ => Err(self.err(k, format!("'{k}.{name}' must be a string"))),
                })
                .collect(),
            Some(_) => Err(self.err(k, format!("'{k}' must be an object of strings"))),
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
