//! Starts the server in-process on 127.0.0.1:0 with temporary directories.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use async_trait::async_trait;
use openhands_agent_server::http::state::Limits;
use openhands_agent_server::{AppState, Config, RuntimeScope, RuntimeScopeResolver, ServerHandle};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tempfile::TempDir;
use uuid::Uuid;

/// The session key used by authenticated test servers.
pub const KEY: &str = "test-key";

/// A running server and its scratch directory.
pub struct TestServer {
    pub handle: ServerHandle,
    pub dir: TempDir,
    pub client: reqwest::Client,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.handle.url())
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("{}{path}", self.handle.ws_url())
    }

    pub fn bash_dir(&self) -> PathBuf {
        self.dir.path().join("bash_events")
    }

    /// A request with the session key.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .get(self.url(path))
            .header("X-Session-API-Key", KEY)
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(path))
            .header("X-Session-API-Key", KEY)
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .delete(self.url(path))
            .header("X-Session-API-Key", KEY)
    }
}

/// Builder options.
#[derive(Default)]
pub struct Options {
    pub keys: Vec<String>,
    pub limits: Option<Limits>,
    pub runtimes: HashMap<Uuid, RuntimeScope>,
    pub tools: Vec<String>,
    pub cors: Vec<String>,
}

struct FixedScopes(HashMap<Uuid, RuntimeScope>);

#[async_trait]
impl RuntimeScopeResolver for FixedScopes {
    async fn resolve(&self, id: Uuid) -> Option<RuntimeScope> {
        self.0.get(&id).cloned()
    }
}

pub fn config_in(dir: &std::path::Path, keys: Vec<String>) -> Config {
    Config {
        session_api_keys: keys,
        conversations_path: dir.join("conversations"),
        workspace_path: dir.join("project"),
        bash_events_dir: dir.join("bash_events"),
        // Never the user's real ~/.openhands (settings, profiles, sign-in
        // credentials that some routes write or delete).
        persistence_dir: dir.join("persistence"),
        ..Config::default()
    }
}

pub async fn start_with(options: Options) -> TestServer {
    start_in(tempfile::tempdir().unwrap(), options).await
}

pub async fn start_in(dir: TempDir, options: Options) -> TestServer {
    openhands_agent_server::install_tls_provider();
    let mut config = config_in(dir.path(), options.keys);
    config.allow_cors_origins = options.cors;
    let tools = options.tools.clone();
    let mut state = AppState::new(config).with_tool_names(move || tools.clone());
    if let Some(limits) = options.limits {
        state = state.with_limits(limits);
    }
    if !options.runtimes.is_empty() {
        state = state.with_runtime_scopes(Arc::new(FixedScopes(options.runtimes)));
    }
    let handle = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    TestServer {
        handle,
        dir,
        client,
    }
}

/// An authenticated server (key [`KEY`]).
pub async fn start() -> TestServer {
    start_with(Options {
        keys: vec![KEY.into()],
        ..Options::default()
    })
    .await
}

/// `path?name=value` with the value URL-encoded.
pub fn with_query(path: &str, name: &str, value: &str) -> String {
    let encoded: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair(name, value)
        .finish();
    format!("{path}?{encoded}")
}
