//! The LLM an agent server is configured with, fetched for this process
//! (the reference's `RemoteWorkspace.get_llm`): a named profile, else the
//! settings' active profile, else the settings' agent LLM.

use crate::remote::RemoteWorkspace;
use crate::types::WorkspaceError;
use serde_json::{Map, Value, json};

/// The header asking the server for secrets in clear.
const EXPOSE_SECRETS: &str = "X-Expose-Secrets";

impl RemoteWorkspace {
    /// The server's LLM as the SDK's LLM JSON, its key in clear: the
    /// profile `profile_name` (`GET /api/profiles/{name}`, `usage_id`
    /// `profile:{name}`); without one, the active profile of `GET
    /// /api/settings`, else the settings' `agent_settings.llm`. `overrides`
    /// replace fields. A missing profile, or settings for an ACP agent
    /// (which has no LLM) without a profile, is an error saying so.
    pub async fn get_llm(
        &self,
        profile_name: Option<&str>,
        overrides: Map<String, Value>,
    ) -> Result<Value, WorkspaceError> {
        let name = match profile_name {
            Some(n) => Some(n.to_string()),
            None => self
                .settings(false)
                .await?
                .get("active_profile")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(String::from),
        };
        let mut llm = match name {
            Some(name) => {
                let mut config = self.profile_config(&name).await?;
                config.insert("usage_id".into(), json!(format!("profile:{name}")));
                config
            }
            None => {
                let settings = self.settings(true).await?;
                let agent = &settings["agent_settings"];
                if agent.get("agent_kind").and_then(Value::as_str) == Some("acp") {
                    return Err(WorkspaceError::Invalid(
                        "No LLM profile is active and the agent settings are for an ACP agent, \
                         which has no LLM; pass profile_name."
                            .into(),
                    ));
                }
                agent
                    .get("llm")
                    .and_then(Value::as_object)
                    .cloned()
                    .ok_or_else(|| {
                        WorkspaceError::Invalid("the server's settings have no agent LLM".into())
                    })?
            }
        };
        llm.extend(overrides);
        Ok(Value::Object(llm))
    }

    /// `GET /api/settings`, secrets in clear when `expose`.
    async fn settings(&self, expose: bool) -> Result<Value, WorkspaceError> {
        let mut req = self.client().request(reqwest::Method::GET, "/api/settings");
        if expose {
            req = req.header(EXPOSE_SECRETS, "plaintext");
        }
        self.answer_json(req, "settings request").await
    }

    /// The `config` of the saved profile `name`, its key in clear.
    async fn profile_config(&self, name: &str) -> Result<Map<String, Value>, WorkspaceError> {
        let path = format!("/api/profiles/{}", urlencoding_path(name));
        let req = self
            .client()
            .request(reqwest::Method::GET, &path)
            .header(EXPOSE_SECRETS, "plaintext");
        let body = match self.answer_json(req, "profile request").await {
            Err(WorkspaceError::Http { status: 404, .. }) => {
                return Err(WorkspaceError::Invalid(format!(
                    "LLM profile '{name}' not found"
                )));
            }
            other => other?,
        };
        body.get("config")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| {
                WorkspaceError::Invalid(format!("LLM profile '{name}' has invalid config"))
            })
    }

    async fn answer_json(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<Value, WorkspaceError> {
        let answer = self
            .client()
            .send(req, what, &[])
            .await
            .map_err(|e| match e {
                openhands_client::ClientError::Status { status, body, .. } => {
                    WorkspaceError::Http { status, body }
                }
                other => WorkspaceError::Transport(other.to_string()),
            })?;
        answer
            .json_value(what)
            .map_err(|e| WorkspaceError::Transport(e.to_string()))
    }
}

/// `name` as one URL path segment.
fn urlencoding_path(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
