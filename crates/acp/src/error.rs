//! ACP failures and the reference's error codes for them.

use crate::rpc::RpcError;
use serde_json::Value;

/// Why starting or using an ACP server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AcpError {
    /// The process could not be started (missing or not executable).
    #[error("{0}")]
    Spawn(String),
    /// Spawn + handshake + session creation took longer than allowed.
    #[error(
        "ACP server did not start within {0:.0}s (acp_startup_timeout); it may be waiting for authentication"
    )]
    StartupTimeout(f64),
    /// A protocol exchange failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The prompt saw no activity for `acp_prompt_timeout` seconds.
    #[error("ACP prompt timed out after {0:.0}s with no activity from the ACP server")]
    IdleTimeout(f64),
    /// The request cannot be carried out (bad model name, no session, ...).
    #[error("{0}")]
    Invalid(String),
    /// Authentication failed or no credential fits the server's methods.
    #[error("{0}")]
    Auth(String),
    /// A bound credential file could not be loaded or synced back (the
    /// reference's `CredentialSyncError`: not a sign-in problem).
    #[error("{0}")]
    CredentialSync(String),
}

const AUTH_MARKERS: [&str; 9] = [
    "unauthorized",
    "invalid api key",
    "invalid_api_key",
    "invalid x-api-key",
    "expired",
    "please run /login",
    "authentication required",
    "oauth token",
    "credential",
];

impl AcpError {
    /// Lowercased message and data, what the classification looks at.
    fn text(&self) -> String {
        match self {
            AcpError::Rpc(RpcError::Remote { message, data, .. }) => {
                format!("{message} {}", data_text(data.as_ref())).to_lowercase()
            }
            other => other.to_string().to_lowercase(),
        }
    }

    /// Whether it is a credential problem (the explicit `-32000`, or an
    /// upstream 401/403 the server wrapped).
    pub fn indicates_auth(&self) -> bool {
        if let AcpError::CredentialSync(_) = self {
            return false;
        }
        if let AcpError::Rpc(RpcError::Remote { code: -32000, .. }) | AcpError::Auth(_) = self {
            return true;
        }
        let text = self.text();
        AUTH_MARKERS.iter().any(|m| text.contains(m))
            || text
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "401" || w == "403")
    }

    /// The code of a start failure (`ACPAuthRequired`, `ACPStartupTimeout`,
    /// `ACPSpawnError`, `ACPInitError`).
    pub fn init_code(&self) -> &'static str {
        if self.indicates_auth() {
            "ACPAuthRequired"
        } else {
            match self {
                AcpError::StartupTimeout(_) => "ACPStartupTimeout",
                AcpError::Spawn(_) => "ACPSpawnError",
                _ => "ACPInitError",
            }
        }
    }

    /// The code of a failed turn (`UsagePolicyRefusal`, `ACPAuthRequired`,
    /// `ACPPromptError`).
    pub fn turn_code(&self) -> &'static str {
        let text = self.text();
        if text.contains("usage policy") || text.contains("content policy") {
            "UsagePolicyRefusal"
        } else if self.indicates_auth() {
            "ACPAuthRequired"
        } else {
            "ACPPromptError"
        }
    }

    /// A readable detail keeping the JSON-RPC code and data, at most 500
    /// characters.
    pub fn detail(&self) -> String {
        let detail = match self {
            AcpError::Rpc(RpcError::Remote {
                code,
                message,
                data,
            }) => {
                let data = data_text(data.as_ref());
                if data.is_empty() || &data == message {
                    format!("[{code}] {message}")
                } else {
                    format!("[{code}] {message}: {data}")
                }
            }
            other => other.to_string(),
        };
        detail.chars().take(500).collect()
    }
}

/// The human-readable part of a JSON-RPC error's `data`.
fn data_text(data: Option<&Value>) -> String {
    match data {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) => {
            for key in ["message", "details", "detail", "error"] {
                if let Some(Value::String(v)) = m.get(key).filter(|v| v.as_str() != Some("")) {
                    return match m.get("codex_error_info").filter(|x| !x.is_null()) {
                        Some(extra) => format!("{v} ({})", value_text(extra)),
                        None => v.clone(),
                    };
                }
            }
            Value::Object(m.clone()).to_string()
        }
        Some(other) => other.to_string(),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn remote(code: i64, message: &str, data: Option<Value>) -> AcpError {
        AcpError::Rpc(RpcError::Remote {
            code,
            message: message.into(),
            data,
        })
    }

    #[test]
    fn codes_follow_the_reference_classification() {
        assert_eq!(remote(-32000, "x", None).init_code(), "ACPAuthRequired");
        assert_eq!(
            remote(
                -32603,
                "Internal error",
                Some(json!({"details": "HTTP 401 from upstream"}))
            )
            .turn_code(),
            "ACPAuthRequired"
        );
        assert_eq!(
            remote(-32603, "violates usage policy", None).turn_code(),
            "UsagePolicyRefusal"
        );
        assert_eq!(remote(-32603, "boom", None).turn_code(), "ACPPromptError");
        assert_eq!(
            AcpError::StartupTimeout(90.0).init_code(),
            "ACPStartupTimeout"
        );
        assert_eq!(
            AcpError::Spawn("missing".into()).init_code(),
            "ACPSpawnError"
        );
        assert_eq!(
            AcpError::Rpc(RpcError::Closed("gone".into())).init_code(),
            "ACPInitError"
        );
        // "4010" is not a status code.
        assert_eq!(
            remote(-32603, "code 4010", None).turn_code(),
            "ACPPromptError"
        );
    }

    #[test]
    fn details_keep_code_and_data() {
        assert_eq!(
            remote(
                -32603,
                "Internal error",
                Some(json!({"message": "model not found", "codex_error_info": "x"}))
            )
            .detail(),
            "[-32603] Internal error: model not found (x)"
        );
        assert_eq!(
            remote(-32602, "bad", Some(json!("bad"))).detail(),
            "[-32602] bad"
        );
        assert!(remote(1, &"x".repeat(900), None).detail().chars().count() == 500);
    }
}
