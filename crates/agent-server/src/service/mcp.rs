//! `POST /api/mcp/test`: one candidate MCP server is started, its tools
//! listed, optionally one tool called, and everything stopped again;
//! nothing is stored. Answers are the reference's `MCPTestSuccess` /
//! `MCPTestFailure` (a failure to connect is an answer, not an error).

use super::mcp_oauth::sealed;
use openhands_mcp::oauth::{MemoryStates, OAuthConfig};
use openhands_mcp::{
    McpClient, McpConfig, McpContent, McpError, McpSession, StartOptions, Transport, UnknownFields,
};
use openhands_protocol::conversations::{loc, redact_value};
use openhands_protocol::validation::{ValidationError, ValidationIssue};
use openhands_sdk::secrets::Cipher;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const DEFAULT_NAME: &str = "test-server";

/// A validated `MCPTestRequest`.
#[derive(Debug, Clone)]
pub struct McpTestRequest {
    /// The server's name in the temporary map.
    pub name: String,
    /// The one-server configuration.
    pub config: McpConfig,
    /// Limit for connecting and listing (and for the tool call).
    pub timeout: Duration,
    /// The tool to call after listing, with its arguments.
    pub tool_call: Option<(String, Map<String, Value>)>,
}

fn issue(path: &[&str], kind: &str, msg: impl Into<String>, input: Value) -> ValidationIssue {
    ValidationIssue::new(kind, loc(path), msg, redact_value(input))
}

/// Parses an `MCPTestRequest` body: `name` (default `test-server`),
/// `server` (the reference's stdio or remote spec, `type` or `transport`),
/// `timeout` (seconds, 0 < t <= 120, default 15), `tool_call`.
pub fn parse_test_request(raw: &Value) -> Result<McpTestRequest, ValidationError> {
    let fail = |i: ValidationIssue| ValidationError::new(vec![i]);
    let Some(body) = raw.as_object() else {
        return Err(fail(issue(
            &["body"],
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            raw.clone(),
        )));
    };
    let name = match body.get("name") {
        None | Some(Value::Null) => DEFAULT_NAME.to_string(),
        Some(Value::String(s)) if (1..=128).contains(&s.chars().count()) => {
            let t = s.trim();
            if t.is_empty() { DEFAULT_NAME } else { t }.to_string()
        }
        Some(other) => {
            return Err(fail(issue(
                &["body", "name"],
                "string_type",
                "Input should be a string of 1 to 128 characters",
                other.clone(),
            )));
        }
    };
    let timeout = match body.get("timeout") {
        None | Some(Value::Null) => 15.0,
        Some(v) => match v.as_f64() {
            Some(t) if t > 0.0 && t <= 120.0 => t,
            _ => {
                return Err(fail(issue(
                    &["body", "timeout"],
                    "less_than_equal",
                    "Input should be a number greater than 0 and at most 120",
                    v.clone(),
                )));
            }
        },
    };
    let Some(server) = body.get("server") else {
        return Err(fail(ValidationIssue::missing(loc(&["body", "server"]))));
    };
    let Some(server) = server.as_object() else {
        return Err(fail(issue(
            &["body", "server"],
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            server.clone(),
        )));
    };
    if server.contains_key("authentication") {
        return Err(fail(issue(
            &["body"],
            "value_error",
            "Value error, OAuth authentication metadata belongs under auth.authentication.",
            raw.clone(),
        )));
    }
    let mut spec = server.clone();
    if let Some(t) = spec.remove("type") {
        spec.insert("transport".into(), t);
    }
    let config =
        McpConfig::parse(&json!({ name.clone(): spec }), UnknownFields::Refuse).map_err(|e| {
            let mut path = vec!["body", "server"];
            if let Some(f) = &e.field {
                if f == "transport" && server.contains_key("type") {
                    path.push("type");
                } else {
                    path.extend(f.split('.'));
                }
            }
            let message = e.to_string();
            fail(
                issue(
                    &path,
                    "value_error",
                    format!("Value error, {message}"),
                    super::mcp_settings::redacted_server(&Value::Object(server.clone())),
                )
                .with_ctx(json!({ "error": message })),
            )
        })?;
    let tool_call = match body.get("tool_call") {
        None | Some(Value::Null) => None,
        Some(Value::Object(tc)) => {
            let tool = match tc.get("name") {
                Some(Value::String(n)) if !n.is_empty() => n.clone(),
                other => {
                    return Err(fail(issue(
                        &["body", "tool_call", "name"],
                        "string_too_short",
                        "tool_call.name must be a non-empty string",
                        other.cloned().unwrap_or(Value::Null),
                    )));
                }
            };
            let args = match tc.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(a)) => a.clone(),
                Some(other) => {
                    return Err(fail(issue(
                        &["body", "tool_call", "arguments"],
                        "dict_type",
                        "Input should be a valid dictionary",
                        other.clone(),
                    )));
                }
            };
            Some((tool, args))
        }
        Some(other) => {
            return Err(fail(issue(
                &["body", "tool_call"],
                "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from",
                other.clone(),
            )));
        }
    };
    Ok(McpTestRequest {
        name,
        config,
        timeout: Duration::from_secs_f64(timeout),
        tool_call,
    })
}

impl McpTestRequest {
    /// The URL and OAuth settings of the server, when it uses OAuth.
    pub fn oauth(&self) -> Option<(String, OAuthConfig)> {
        let server = self.config.servers.first()?;
        let oauth = server.oauth.clone()?;
        match &server.transport {
            Transport::Http { url, .. } | Transport::Sse { url, .. } => Some((url.clone(), oauth)),
            Transport::Stdio { .. } => None,
        }
    }

    /// Decrypts the server's stored OAuth state (`auth.state`) with
    /// `cipher`, in place.
    pub fn open_oauth_state(&mut self, cipher: Option<&Cipher>) {
        if let Some(oauth) = self
            .config
            .servers
            .first_mut()
            .and_then(|s| s.oauth.as_mut())
            && let Some(state) = &oauth.state
            && let Value::Object(m) = state.to_json()
        {
            oauth.state = Some(sealed::open(&m, cipher));
        }
    }
}

/// Runs the probe: the `MCPTestSuccess` or `MCPTestFailure` JSON. Stdio
/// servers start in `working_dir` with the server's environment policy.
/// An OAuth server uses its own `auth.state` (never a user's consent);
/// the state it ends with (refreshed, perhaps) is answered as
/// `oauth_state`, secrets encrypted with `cipher`.
pub async fn probe(
    mut req: McpTestRequest,
    working_dir: PathBuf,
    exec: openhands_workspace::exec::ExecPolicy,
    cipher: Option<&Cipher>,
) -> Value {
    req.open_oauth_state(cipher);
    let store = Arc::new(MemoryStates::new());
    probe_with(req, working_dir, exec, store, cipher).await
}

/// [`probe`] with the OAuth states in `store` (an authorization may have
/// just put tokens there).
pub async fn probe_with(
    req: McpTestRequest,
    working_dir: PathBuf,
    exec: openhands_workspace::exec::ExecPolicy,
    store: Arc<MemoryStates>,
    cipher: Option<&Cipher>,
) -> Value {
    let oauth = req.oauth();
    let mut out = probe_in(req, working_dir, exec, store.clone()).await;
    if out["ok"] == true
        && let Some((url, cfg)) = oauth
        && let Some(state) = store.get(&url).or(cfg.state)
        && !state.is_empty()
    {
        out["oauth_state"] = sealed::seal(&state, cipher);
    }
    out
}

async fn probe_in(
    req: McpTestRequest,
    working_dir: PathBuf,
    exec: openhands_workspace::exec::ExecPolicy,
    store: Arc<MemoryStates>,
) -> Value {
    let mut opts = StartOptions::new(working_dir);
    opts.oauth_states = store;
    opts.env = exec.env;
    opts.sandbox = exec.sandbox;
    opts.startup_timeout = req.timeout;
    opts.call_timeout = req.timeout;
    let started = McpSession::start(&req.config, opts).await;
    let session = started.session;
    if let Some(f) = started.failures.first() {
        session.close().await;
        let kind = match f.error {
            McpError::Timeout { .. } => "timeout",
            McpError::Start { .. } | McpError::Stopped { .. } => "connection",
            _ => "unknown",
        };
        return json!({"ok": false, "error": f.error.to_string(), "error_kind": kind});
    }
    let tools: Vec<String> = session.tools().into_iter().map(|t| t.name).collect();
    let mut out = json!({"ok": true, "tools": tools});
    if let Some((tool, args)) = req.tool_call {
        let result = if !tools.contains(&tool) {
            let available = if tools.is_empty() {
                "none".to_string()
            } else {
                tools.join(", ")
            };
            json!({
                "is_error": true,
                "text": format!("Tool '{tool}' not advertised by server (available: {available})"),
            })
        } else {
            match session.call_tool(&tool, args).await {
                Ok(r) => {
                    let text: Vec<String> = r
                        .content
                        .into_iter()
                        .filter_map(|c| match c {
                            McpContent::Text(t) => Some(t),
                            _ => None,
                        })
                        .collect();
                    json!({"is_error": r.is_error, "text": text.join("\n")})
                }
                Err(McpError::Timeout { after, .. }) => json!({
                    "is_error": true,
                    "text": format!("Tool '{tool}' call timed out after {} seconds", after.as_secs_f64()),
                }),
                Err(e) => json!({"is_error": true, "text": e.to_string()}),
            }
        };
        out["tool_result"] = result;
    }
    session.close().await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_validated_like_the_reference() {
        let r = parse_test_request(&json!({"server": {"command": "npx", "args": ["x"]}})).unwrap();
        assert_eq!(r.name, "test-server");
        assert_eq!(r.timeout, Duration::from_secs(15));
        let r = parse_test_request(&json!({
            "name": " fs ", "server": {"type": "shttp", "url": "http://h/mcp"}, "timeout": 2,
            "tool_call": {"name": "echo", "arguments": {"message": "x"}}
        }))
        .unwrap();
        assert_eq!(r.name, "fs");
        assert_eq!(r.tool_call.unwrap().0, "echo");
        let loc_of = |v: Value| {
            serde_json::to_value(&parse_test_request(&v).unwrap_err().issues[0]).unwrap()["loc"]
                .clone()
        };
        assert_eq!(loc_of(json!({})), json!(["body", "server"]));
        assert_eq!(
            loc_of(json!({"server": {"type": "stdio"}})),
            json!(["body", "server", "command"])
        );
        assert_eq!(
            loc_of(json!({"server": {"type": "pigeon", "url": "http://h"}})),
            json!(["body", "server", "type"])
        );
        assert_eq!(
            loc_of(json!({"server": {"command": "x"}, "timeout": 500})),
            json!(["body", "timeout"])
        );
    }
}
