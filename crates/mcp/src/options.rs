//! [`StartOptions`]: the limits and environment every server of a session
//! shares.

use crate::oauth::{Consent, MemoryStates, OAuthStateStore};
use openhands_workspace::exec::{EnvPolicy, Sandbox};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What every server of a session shares.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The environment policy of stdio children.
    pub env: EnvPolicy,
    /// The sandbox stdio children run in (`None`: on the host).
    pub sandbox: Option<Sandbox>,
    /// The workspace: stdio servers without `cwd` run here, relative `cwd`s
    /// resolve against it.
    pub working_dir: PathBuf,
    /// Limit for starting one server (spawn/connect, `initialize`,
    /// `tools/list`).
    pub startup_timeout: Duration,
    /// Limit for one tool call (a server's own `timeout` wins).
    pub call_timeout: Duration,
    /// Where OAuth servers' tokens are read and refreshed ones written
    /// (default: in memory, seeded by each server's own `auth.state`).
    pub oauth_states: Arc<dyn OAuthStateStore>,
    /// Authorizes OAuth servers without tokens before connecting them
    /// (`None`: stored tokens only, a server without them fails to start).
    pub oauth_consent: Option<Consent>,
}

impl StartOptions {
    /// The reference's limits (30 s to start, 300 s per call) for
    /// `working_dir` with the default environment policy.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self {
            env: EnvPolicy::default(),
            sandbox: None,
            working_dir: working_dir.into(),
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(300),
            oauth_states: Arc::new(MemoryStates::new()),
            oauth_consent: None,
        }
    }
}
