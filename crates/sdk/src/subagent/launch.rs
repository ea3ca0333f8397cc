//! Child conversations started by the agent itself: the host that runs the
//! conversation (the agent server) launches a separate, independently
//! running conversation linked to its parent. Unlike a sub-agent, the
//! parent does not wait for the child; it gets the child's id back.

use async_trait::async_trait;
use openhands_client::{HttpOptions, http_client};
use openhands_protocol::SESSION_API_KEY_HEADER;
use openhands_protocol::conversations::{
    StartChildConversationRequest, StartChildConversationResponse,
};
use uuid::Uuid;

/// Why a child conversation was not launched; each message is what the
/// agent is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The request does not validate.
    #[error("Invalid child conversation request: {0}")]
    Invalid(String),
    /// No answer in time (seconds waited); the child may exist.
    #[error(
        "Child conversation launch timed out after {0} seconds. The child may still have been created; check with the user before retrying."
    )]
    TimedOut(u64),
    /// The host refused: its status and detail.
    #[error("Child conversation launch failed ({status}): {detail}")]
    Refused {
        /// HTTP status (404: the parent is gone).
        status: u16,
        /// The host's reason.
        detail: String,
    },
    /// The launch itself failed (transport, task, answer).
    #[error("Child conversation launch failed: {0}")]
    Failed(String),
}

/// Starts child conversations of the conversations of one host.
#[async_trait]
pub trait ChildLauncher: Send + Sync {
    /// Starts a child of `parent` working on `request.task`; the answer
    /// says which conversation it is, or why it could not be started.
    async fn launch(
        &self,
        parent: Uuid,
        request: StartChildConversationRequest,
    ) -> Result<StartChildConversationResponse, LaunchError>;
}

/// Session key headers the launcher sends, read from the host's own
/// environment as the reference does (`OH_SESSION_API_KEYS_0`, then
/// `SESSION_API_KEY`).
const SESSION_KEY_VARIABLES: [&str; 2] = ["OH_SESSION_API_KEYS_0", "SESSION_API_KEY"];

/// How long a launch may take: it may create a git worktree or a sandbox.
pub const LAUNCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Launches children by `POST`ing the request to a fixed endpoint (a
/// hosting backend's launcher, given as the tool's `launch_url`).
#[derive(Debug, Clone)]
pub struct HttpChildLauncher {
    url: String,
    client: reqwest::Client,
}

impl HttpChildLauncher {
    /// A launcher posting to `url` (`http://` or `https://`, trusting the
    /// system roots); fails only when the HTTP client cannot be built.
    pub fn new(url: impl Into<String>) -> Result<Self, openhands_client::ClientError> {
        let options = HttpOptions {
            timeout: Some(LAUNCH_TIMEOUT),
            ..HttpOptions::default()
        };
        Ok(Self {
            url: url.into(),
            client: http_client(&options)?,
        })
    }
}

/// The `detail` of an error answer, or the start of its body.
fn error_detail(body: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => match v.get("detail") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(other) if !other.is_null() => other.to_string(),
            _ => body.chars().take(500).collect(),
        },
        Err(_) => body.chars().take(500).collect(),
    }
}

#[async_trait]
impl ChildLauncher for HttpChildLauncher {
    async fn launch(
        &self,
        _parent: Uuid,
        request: StartChildConversationRequest,
    ) -> Result<StartChildConversationResponse, LaunchError> {
        let mut post = self
            .client
            .post(&self.url)
            .timeout(LAUNCH_TIMEOUT)
            .json(&request);
        if let Some(key) = SESSION_KEY_VARIABLES
            .iter()
            .find_map(|v| openhands_workspace::exec::env::host_var(v).filter(|k| !k.is_empty()))
        {
            post = post.header(SESSION_API_KEY_HEADER, key);
        }
        let answer = post.send().await.map_err(|e| {
            if e.is_timeout() {
                LaunchError::TimedOut(LAUNCH_TIMEOUT.as_secs())
            } else {
                LaunchError::Failed(e.to_string())
            }
        })?;
        let status = answer.status();
        let body = answer
            .text()
            .await
            .map_err(|e| LaunchError::Failed(e.to_string()))?;
        if !status.is_success() {
            return Err(LaunchError::Refused {
                status: status.as_u16(),
                detail: error_detail(&body),
            });
        }
        serde_json::from_str(&body)
            .map_err(|e| LaunchError::Failed(format!("unexpected answer: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_detail_prefers_the_detail_field() {
        assert_eq!(
            error_detail(r#"{"detail":"Parent conversation not found"}"#),
            "Parent conversation not found"
        );
        assert_eq!(
            error_detail(r#"{"detail":[{"msg":"x"}]}"#),
            r#"[{"msg":"x"}]"#
        );
        assert_eq!(error_detail("plain text"), "plain text");
    }
}
