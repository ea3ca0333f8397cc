//! Deferred initialization (`OH_DEFERRED_INIT`): the runtime configuration a
//! dormant server receives on `POST /api/init`, how it is merged into the
//! configuration the server booted with, and the init phases.

use crate::config::{Config, WebhookSpec};
use openhands_protocol::{ValidationError, ValidationIssue};
use openhands_wire::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// Where a deferred server is in its start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InitPhase {
    /// Up, waiting for `POST /api/init`.
    Dormant,
    /// `POST /api/init` received, services starting.
    Initializing,
    /// Every route is live.
    Ready,
}

impl InitPhase {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            InitPhase::Dormant => "dormant",
            InitPhase::Initializing => "initializing",
            InitPhase::Ready => "ready",
        }
    }
}

/// `InitStatus`: the phase and the error of the last failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct InitStatus {
    /// `dormant`, `initializing` or `ready`.
    pub state: String,
    /// Why the previous `/api/init` failed (the server went back to dormant).
    pub error: Option<String>,
}

/// `InitRequest`: every field optional, unknown fields refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitRequest {
    /// Per-user session API keys.
    #[serde(default)]
    pub session_api_keys: Option<Vec<String>>,
    /// Key encrypting persisted secrets (blank = unset).
    #[serde(default)]
    pub secret_key: Option<String>,
    /// Earlier secret keys, for decryption only.
    #[serde(default)]
    pub previous_secret_keys: Option<Vec<String>>,
    /// Conversation storage directory.
    #[serde(default)]
    pub conversations_path: Option<PathBuf>,
    /// Bash event storage directory.
    #[serde(default)]
    pub bash_events_dir: Option<PathBuf>,
    /// Root of conversation git worktrees.
    #[serde(default)]
    pub conversation_worktree_root: Option<PathBuf>,
    /// Per-user webhooks.
    #[serde(default)]
    pub webhooks: Option<Vec<WebhookSpec>>,
    /// External URL of this server.
    #[serde(default)]
    pub web_url: Option<String>,
    /// CORS origins.
    #[serde(default)]
    pub allow_cors_origins: Option<Vec<String>>,
    /// Conversation-run concurrency limit (≥ 1).
    #[serde(default)]
    pub max_concurrent_runs: Option<i64>,
    /// Process environment for the services (not supported: refused).
    #[serde(default)]
    pub env: Option<Value>,
    /// Product-analytics policy (not supported: refused).
    #[serde(default)]
    pub telemetry: Option<Value>,
}

/// Why a request cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum InitRequestError {
    /// A field has the wrong shape or value (422 with pydantic issues).
    #[error("invalid init request")]
    Invalid(ValidationError),
    /// A field this server does not implement (422 naming the field).
    #[error("{0}")]
    Unsupported(String),
}

impl InitRequest {
    /// Parses and checks a body.
    pub fn parse(body: Value) -> Result<Self, InitRequestError> {
        let req: InitRequest =
            openhands_protocol::validation::from_body(body).map_err(InitRequestError::Invalid)?;
        if let Some(n) = req.max_concurrent_runs
            && n < 1
        {
            let issue = ValidationIssue::new(
                "greater_than_equal",
                vec!["body".into(), "max_concurrent_runs".into()],
                "Input should be greater than or equal to 1",
                Value::from(n),
            )
            .with_ctx(serde_json::json!({"ge": 1}));
            return Err(InitRequestError::Invalid(ValidationError::one(issue)));
        }
        for (name, given) in [("env", &req.env), ("telemetry", &req.telemetry)] {
            if given.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(InitRequestError::Unsupported(format!(
                    "{name}: not supported by this server's /api/init; configure it at start-up instead"
                )));
            }
        }
        Ok(req)
    }

    /// `base` with this request's overrides, no longer deferred. Without a
    /// usable secret key the first session key becomes it, as at start-up.
    pub fn apply(&self, base: &Config) -> Config {
        let mut c = base.clone();
        c.deferred_init = false;
        if let Some(keys) = &self.session_api_keys {
            c.session_api_keys = keys.clone();
        }
        match &self.secret_key {
            Some(k) if !k.trim().is_empty() => c.secret_key = Some(SecretString::new(k.clone())),
            _ => {
                if let (Some(keys), None) = (&self.session_api_keys, &base.secret_key)
                    && let Some(first) = keys.first()
                {
                    c.secret_key = Some(SecretString::new(first.clone()));
                }
            }
        }
        if let Some(prev) = &self.previous_secret_keys {
            c.previous_secret_keys = prev.iter().cloned().map(SecretString::new).collect();
        }
        if let Some(p) = &self.conversations_path {
            c.conversations_path = p.clone();
        }
        if let Some(p) = &self.bash_events_dir {
            c.bash_events_dir = p.clone();
        }
        if let Some(p) = &self.conversation_worktree_root {
            c.conversation_worktree_root = p.clone();
        }
        if let Some(w) = &self.webhooks {
            c.webhooks = w.clone();
        }
        if let Some(u) = &self.web_url {
            c.web_url = Some(u.clone());
        }
        if let Some(o) = &self.allow_cors_origins {
            c.allow_cors_origins = o.clone();
        }
        if let Some(n) = self.max_concurrent_runs {
            c.max_concurrent_runs = usize::try_from(n).unwrap_or(1).max(1);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides_apply_and_the_first_key_becomes_the_secret() {
        let base = Config {
            deferred_init: true,
            ..Config::default()
        };
        let req = InitRequest::parse(json!({
            "session_api_keys": ["k1", "k2"],
            "conversations_path": "/data/conv",
            "max_concurrent_runs": 3
        }))
        .unwrap();
        let c = req.apply(&base);
        assert!(!c.deferred_init);
        assert_eq!(c.session_api_keys, vec!["k1", "k2"]);
        assert_eq!(
            c.secret_key.as_ref().map(|s| s.expose().to_string()),
            Some("k1".into())
        );
        assert_eq!(c.conversations_path, PathBuf::from("/data/conv"));
        assert_eq!(c.max_concurrent_runs, 3);
        // An explicit secret wins; a blank one does not.
        let c = InitRequest::parse(json!({"session_api_keys": ["k"], "secret_key": "s"}))
            .unwrap()
            .apply(&base);
        assert_eq!(c.secret_key.unwrap().expose(), "s");
        let c = InitRequest::parse(json!({"session_api_keys": ["k"], "secret_key": "  "}))
            .unwrap()
            .apply(&base);
        assert_eq!(c.secret_key.unwrap().expose(), "k");
    }

    #[test]
    fn bad_requests_are_refused() {
        assert!(matches!(
            InitRequest::parse(json!({"nope": 1})),
            Err(InitRequestError::Invalid(_))
        ));
        assert!(matches!(
            InitRequest::parse(json!({"max_concurrent_runs": 0})),
            Err(InitRequestError::Invalid(_))
        ));
        match InitRequest::parse(json!({"env": {"A": "b"}})) {
            Err(InitRequestError::Unsupported(m)) => assert!(m.starts_with("env")),
            other => panic!("{other:?}"),
        }
        assert!(InitRequest::parse(json!({"env": null})).is_ok());
    }
}
