//! [`OpenHandsCloudWorkspace`]: a sandbox of the OpenHands Cloud API,
//! driven as a [`RemoteWorkspace`] — the reference client's calls, with
//! its paths, parameters and headers:
//!
//! * `POST {cloud}/api/v1/sandboxes[?sandbox_spec_id=]` starts a sandbox
//!   (answer: `id`, `session_api_key`); with `sandbox_id` set,
//!   `POST /api/v1/sandboxes/{id}/resume` resumes that one instead;
//! * `GET /api/v1/sandboxes?id={id}` (a list of one sandbox or `null`) is
//!   polled until `status` is `RUNNING` (`PAUSED` is resumed, `ERROR` and
//!   `MISSING` end the wait), then the `AGENT_SERVER` entry of
//!   `exposed_urls` is the agent server and its `/health` must answer;
//! * `DELETE /api/v1/sandboxes/{id}?sandbox_id={id}` on close (unless
//!   `keep_alive`);
//! * `GET /api/v1/users/me?expose_secrets=true` for [`get_llm`] and
//!   `GET /api/v1/users/me` for [`get_mcp_config`] (Cloud key and session
//!   key);
//! * `GET /api/v1/sandboxes/{id}/settings/secrets[?agent_profile_id=]` for
//!   [`get_secrets`] (session key only): names become `LookupSecret`s of
//!   `…/settings/secrets/{name}`, resolved by the agent server.
//!
//! Cloud API calls carry `Authorization: Bearer {cloud_api_key}`; settings
//! calls `X-Session-API-Key`. Transient failures (5xx, connection errors)
//! of the settings calls are retried up to three times, as the reference
//! does. `local_agent_server_mode` connects to the agent server of the
//! sandbox this process runs in (`AGENT_SERVER_PORT`, `SANDBOX_ID`,
//! `SESSION_API_KEY` / `OH_SESSION_API_KEYS_0`) instead of starting one.
//!
//! [`get_llm`]: OpenHandsCloudWorkspace::get_llm
//! [`get_secrets`]: OpenHandsCloudWorkspace::get_secrets
//! [`get_mcp_config`]: OpenHandsCloudWorkspace::get_mcp_config

use crate::Workspace;
use crate::poll::{Backoff, health};
use crate::remote::RemoteWorkspace;
use crate::types::WorkspaceError;
use openhands_client::http::{HttpOptions, http_client};
use openhands_client::{AgentServerClient, TlsOptions};
use openhands_protocol::SESSION_API_KEY_HEADER;
use reqwest::Method;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The `exposed_urls` name of the agent server.
pub const AGENT_SERVER: &str = "AGENT_SERVER";
/// The agent server's port inside a Cloud runtime (local mode).
pub const DEFAULT_AGENT_SERVER_PORT: u16 = 60000;
/// Attempts of a retried call.
const MAX_ATTEMPTS: u32 = 3;
/// Timeout of the sandbox deletion and the `/health` probe.
const SHORT_TIMEOUT: Duration = Duration::from_secs(30);

/// The settings of an [`OpenHandsCloudWorkspace`] (the reference's
/// fields).
#[derive(Debug, Clone)]
pub struct OpenHandsCloudWorkspaceOptions {
    /// Base URL of the Cloud API (`https://app.all-hands.dev`).
    pub cloud_api_url: String,
    /// The Cloud API key (`Authorization: Bearer`).
    pub cloud_api_key: String,
    /// The sandbox specification (e.g. an image) to start.
    pub sandbox_spec_id: Option<String>,
    /// An existing sandbox to resume instead of starting one.
    pub sandbox_id: Option<String>,
    /// Where commands run (`/workspace/project`).
    pub working_dir: String,
    /// Longest wait for the start and resume calls, and for the sandbox
    /// to run.
    pub init_timeout: Duration,
    /// Timeout of the other requests.
    pub api_timeout: Duration,
    /// Leave the sandbox on close instead of deleting it.
    pub keep_alive: bool,
    /// Use the agent server of the sandbox this process runs in.
    pub local_agent_server_mode: bool,
    /// Its port (local mode; `AGENT_SERVER_PORT` wins).
    pub agent_server_port: u16,
    /// First pause between status polls (doubling up to 10 s; the
    /// reference waits 2–10 s).
    pub poll_interval: Duration,
    /// Trusted certificates.
    pub tls: TlsOptions,
}

impl OpenHandsCloudWorkspaceOptions {
    /// The reference's defaults for this Cloud API and key.
    pub fn new(cloud_api_url: impl Into<String>, cloud_api_key: impl Into<String>) -> Self {
        Self {
            cloud_api_url: cloud_api_url.into(),
            cloud_api_key: cloud_api_key.into(),
            sandbox_spec_id: None,
            sandbox_id: None,
            working_dir: "/workspace/project".into(),
            init_timeout: Duration::from_secs(300),
            api_timeout: Duration::from_secs(60),
            keep_alive: false,
            local_agent_server_mode: false,
            agent_server_port: DEFAULT_AGENT_SERVER_PORT,
            poll_interval: Duration::from_secs(2),
            tls: TlsOptions::default(),
        }
    }
}

/// A workspace on an OpenHands Cloud sandbox (the reference's
/// `OpenHandsCloudWorkspace`).
pub struct OpenHandsCloudWorkspace {
    api: CloudApi,
    sandbox_id: Option<String>,
    session_api_key: Option<String>,
    remote: RemoteWorkspace,
    closed: bool,
}

impl std::fmt::Debug for OpenHandsCloudWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenHandsCloudWorkspace")
            .field("cloud_api_url", &self.api.opts.cloud_api_url)
            .field("sandbox_id", &self.sandbox_id)
            .field("host", &self.remote.host())
            .finish_non_exhaustive()
    }
}

impl OpenHandsCloudWorkspace {
    /// Starts (or resumes) a sandbox and waits until its agent server
    /// answers; in local mode, connects to this sandbox's agent server.
    pub async fn start(mut opts: OpenHandsCloudWorkspaceOptions) -> Result<Self, WorkspaceError> {
        opts.cloud_api_url = opts.cloud_api_url.trim_end_matches('/').to_string();
        if opts.cloud_api_url.is_empty() {
            return Err(WorkspaceError::Invalid("cloud_api_url is required".into()));
        }
        let http = http_client(&HttpOptions {
            timeout: None,
            connect_timeout: Some(Duration::from_secs(10)),
            tls: opts.tls.clone(),
            observability_headers: false,
            ..HttpOptions::default()
        })
        .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
        let api = CloudApi { opts, http };
        if api.opts.local_agent_server_mode {
            return Self::local(api);
        }
        let (sandbox_id, first_key) = match api.opts.sandbox_id.clone() {
            Some(id) => {
                api.resume(&id).await?;
                (id, None)
            }
            None => api.create().await?,
        };
        let ready = async {
            let (url, key) = api.wait_running(&sandbox_id).await?;
            let key = key.or(first_key);
            let remote = api.remote(&url, key.as_deref())?;
            Ok::<_, WorkspaceError>((remote, key))
        }
        .await;
        match ready {
            Ok((remote, session_api_key)) => Ok(Self {
                api,
                sandbox_id: Some(sandbox_id),
                session_api_key,
                remote,
                closed: false,
            }),
            Err(e) => {
                if !api.opts.keep_alive {
                    let _ = api.delete(&sandbox_id).await;
                }
                Err(e)
            }
        }
    }

    /// Local agent-server mode: this process runs in the sandbox.
    fn local(api: CloudApi) -> Result<Self, WorkspaceError> {
        use crate::exec::env::host_var;
        let port = match host_var("AGENT_SERVER_PORT") {
            Some(p) => p.parse::<u16>().map_err(|_| {
                WorkspaceError::Invalid(format!("AGENT_SERVER_PORT is not a port: {p}"))
            })?,
            None => api.opts.agent_server_port,
        };
        let sandbox_id = api
            .opts
            .sandbox_id
            .clone()
            .or_else(|| host_var("SANDBOX_ID"));
        let key = host_var("SESSION_API_KEY").or_else(|| host_var("OH_SESSION_API_KEYS_0"));
        if sandbox_id.is_none() {
            tracing::warn!("SANDBOX_ID is not set: get_llm and get_secrets will refuse");
        }
        let remote = api.remote(&format!("http://localhost:{port}"), key.as_deref())?;
        Ok(Self {
            api,
            sandbox_id,
            session_api_key: key,
            remote,
            closed: true,
        })
    }

    /// The agent server's workspace (commands, files, git).
    pub fn workspace(&self) -> &RemoteWorkspace {
        &self.remote
    }

    /// The agent server's URL.
    pub fn host(&self) -> &str {
        self.remote.host()
    }

    /// The sandbox's session key.
    pub fn api_key(&self) -> Option<&str> {
        self.session_api_key.as_deref()
    }

    /// The sandbox's id.
    pub fn sandbox_id(&self) -> Option<&str> {
        self.sandbox_id.as_deref()
    }

    fn running_id(&self) -> Result<&str, WorkspaceError> {
        self.sandbox_id
            .as_deref()
            .ok_or_else(|| WorkspaceError::Invalid("the sandbox is not running".into()))
    }

    /// The LLM of the Cloud account as the SDK's LLM JSON (`model`,
    /// `api_key`, `base_url`), or the named profile of its
    /// `llm_profiles` (with `usage_id` `profile:{name}`); `overrides`
    /// replace fields.
    pub async fn get_llm(
        &self,
        profile_name: Option<&str>,
        overrides: Map<String, Value>,
    ) -> Result<Value, WorkspaceError> {
        self.running_id()?;
        let data = self
            .api
            .retried(|| {
                self.api.call(
                    Method::GET,
                    "/api/v1/users/me",
                    &[("expose_secrets", "true")],
                    self.session_header(),
                    true,
                )
            })
            .await?;
        let mut llm = match profile_name {
            Some(name) => {
                let profile = data
                    .get("llm_profiles")
                    .and_then(|p| p.get("profiles"))
                    .and_then(|p| p.get(name))
                    .and_then(Value::as_object)
                    .ok_or_else(|| {
                        WorkspaceError::Invalid(format!("LLM profile '{name}' not found"))
                    })?;
                let mut m = profile.clone();
                m.insert("usage_id".into(), json!(format!("profile:{name}")));
                m
            }
            None => {
                let mut m = Map::new();
                for (from, to) in [
                    ("llm_model", "model"),
                    ("llm_api_key", "api_key"),
                    ("llm_base_url", "base_url"),
                ] {
                    if let Some(v) = data.get(from).filter(|v| truthy(v)) {
                        m.insert(to.into(), v.clone());
                    }
                }
                m
            }
        };
        llm.extend(overrides);
        Ok(Value::Object(llm))
    }

    /// `LookupSecret`s for the Cloud account's secrets (all, or those in
    /// `names`): JSON the SDK's `update_secrets` and conversation secrets
    /// take. Values never pass through this process; the agent server
    /// fetches them with the session key.
    pub async fn get_secrets(
        &self,
        names: Option<&[&str]>,
        agent_profile_id: Option<&str>,
    ) -> Result<BTreeMap<String, Value>, WorkspaceError> {
        let id = self.running_id()?;
        let base = self.api.settings_base(id);
        let query: Vec<(&str, &str)> = agent_profile_id
            .map(|p| vec![("agent_profile_id", p)])
            .unwrap_or_default();
        let path = format!("{base}/secrets");
        let data = self
            .api
            .retried(|| {
                self.api
                    .call(Method::GET, &path, &query, self.session_header(), false)
            })
            .await?;
        let mut out = BTreeMap::new();
        for item in data
            .get("secrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                continue;
            };
            if names.is_some_and(|n| !n.contains(&name)) {
                continue;
            }
            let mut secret = json!({
                "kind": "LookupSecret",
                "url": format!("{}{base}/secrets/{name}", self.api.opts.cloud_api_url),
                "headers": {SESSION_API_KEY_HEADER: self.session_api_key.clone().unwrap_or_default()},
            });
            if let Some(d) = item.get("description").filter(|d| !d.is_null()) {
                secret["description"] = d.clone();
            }
            out.insert(name.to_string(), secret);
        }
        Ok(out)
    }

    /// The Cloud account's MCP servers as the agent's `mcp_config`
    /// `mcpServers` map (`sse_{i}`, `shttp_{i}` and the stdio servers by
    /// name; an `api_key` becomes a bearer header).
    pub async fn get_mcp_config(&self) -> Result<Map<String, Value>, WorkspaceError> {
        self.running_id()?;
        let data = self
            .api
            .retried(|| {
                self.api.call(
                    Method::GET,
                    "/api/v1/users/me",
                    &[],
                    self.session_header(),
                    true,
                )
            })
            .await?;
        Ok(mcp_servers(data.get("mcp_config")))
    }

    fn session_header(&self) -> Option<&str> {
        Some(self.session_api_key.as_deref().unwrap_or(""))
    }

    /// Resumes the sandbox and waits until it runs.
    pub async fn resume(&self) -> Result<(), WorkspaceError> {
        let id = self.running_id()?;
        self.api.resume(id).await?;
        self.api.wait_running(id).await.map(drop)
    }

    /// Refused: the Cloud API has no pause (as the reference says).
    pub async fn pause(&self) -> Result<(), WorkspaceError> {
        Err(WorkspaceError::Invalid(
            "pause is not supported: the OpenHands Cloud API has no pause endpoint".into(),
        ))
    }

    /// Deletes the sandbox (unless `keep_alive`; nothing in local mode).
    pub async fn close(mut self) -> Result<(), WorkspaceError> {
        let was_closed = std::mem::replace(&mut self.closed, true);
        if was_closed || self.api.opts.keep_alive {
            return Ok(());
        }
        match self.sandbox_id.take() {
            Some(id) => self.api.delete(&id).await,
            None => Ok(()),
        }
    }
}

/// Dropped without [`OpenHandsCloudWorkspace::close`]: the sandbox is
/// deleted in the background when a tokio runtime is at hand.
impl Drop for OpenHandsCloudWorkspace {
    fn drop(&mut self) {
        if self.closed || self.api.opts.keep_alive {
            return;
        }
        let Some(id) = self.sandbox_id.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(sandbox = %id, "a cloud workspace was dropped outside a tokio runtime; its sandbox is left");
            return;
        };
        let api = self.api.clone();
        handle.spawn(async move {
            if let Err(e) = api.delete(&id).await {
                tracing::warn!(sandbox = %id, "deleting the sandbox on drop failed: {e}");
            }
        });
    }
}

/// The agent server's workspace.
impl From<&OpenHandsCloudWorkspace> for Workspace {
    fn from(w: &OpenHandsCloudWorkspace) -> Self {
        Workspace::Remote(w.remote.clone())
    }
}

/// Python truthiness of a JSON value (what the reference's `if data.get(..)`
/// tests).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
    }
}

/// The Cloud's `mcp_config` as an `mcpServers` map.
pub fn mcp_servers(config: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(config) = config.and_then(Value::as_object) else {
        return out;
    };
    for (source, prefix, transport) in [
        ("sse_servers", "sse", "sse"),
        ("shttp_servers", "shttp", "streamable-http"),
    ] {
        for (i, server) in config
            .get(source)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut entry = json!({"url": server.get("url").cloned().unwrap_or(Value::Null), "transport": transport});
            if let Some(key) = server
                .get("api_key")
                .filter(|k| truthy(k))
                .and_then(Value::as_str)
            {
                entry["headers"] = json!({"Authorization": format!("Bearer {key}")});
            }
            if transport == "streamable-http"
                && let Some(t) = server.get("timeout").filter(|t| !t.is_null())
            {
                entry["timeout"] = t.clone();
            }
            out.insert(format!("{prefix}_{i}"), entry);
        }
    }
    for server in config
        .get("stdio_servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = server.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut entry = json!({
            "command": server.get("command").cloned().unwrap_or(Value::Null),
            "args": server.get("args").cloned().unwrap_or(json!([])),
        });
        if let Some(env) = server.get("env").filter(|e| !e.is_null()) {
            entry["env"] = env.clone();
        }
        out.insert(name.to_string(), entry);
    }
    out
}

/// The Cloud API calls.
#[derive(Clone)]
struct CloudApi {
    opts: OpenHandsCloudWorkspaceOptions,
    http: reqwest::Client,
}

/// A failed call: whether trying again may help, and the error.
struct CallError {
    transient: bool,
    error: WorkspaceError,
}

impl CloudApi {
    fn settings_base(&self, sandbox_id: &str) -> String {
        format!("/api/v1/sandboxes/{sandbox_id}/settings")
    }

    /// One request to `{cloud}{path}`: the Cloud key as bearer when
    /// `bearer`, the session key when given; the JSON answer (text as a
    /// JSON string).
    async fn call_with(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        session_key: Option<&str>,
        bearer: bool,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.opts.cloud_api_url);
        let mut req = self.http.request(method.clone(), &url).timeout(timeout);
        if !query.is_empty() {
            req = req.query(query);
        }
        if bearer {
            req = req.bearer_auth(&self.opts.cloud_api_key);
        }
        if let Some(k) = session_key {
            req = req.header(SESSION_API_KEY_HEADER, k);
        }
        let transport = |e: reqwest::Error| CallError {
            transient: e.is_connect() || e.is_timeout(),
            error: WorkspaceError::Transport(format!("{method} {url}: {e}")),
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(transport)?;
        if !(200..300).contains(&status) {
            return Err(CallError {
                transient: status >= 500,
                error: WorkspaceError::Http {
                    status,
                    body: format!("{method} {url}: {text}"),
                },
            });
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        session_key: Option<&str>,
        bearer: bool,
    ) -> Result<Value, CallError> {
        self.call_with(
            method,
            path,
            query,
            session_key,
            bearer,
            self.opts.api_timeout,
        )
        .await
    }

    /// Up to three attempts while failures are transient (1 s, 2 s apart).
    async fn retried<F, Fut>(&self, mut f: F) -> Result<Value, WorkspaceError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Value, CallError>>,
    {
        let mut attempt = 1;
        loop {
            match f().await {
                Ok(v) => return Ok(v),
                Err(e) if e.transient && attempt < MAX_ATTEMPTS => {
                    tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
                    attempt += 1;
                }
                Err(e) => return Err(e.error),
            }
        }
    }

    async fn create(&self) -> Result<(String, Option<String>), WorkspaceError> {
        let query: Vec<(&str, &str)> = self
            .opts
            .sandbox_spec_id
            .as_deref()
            .map(|s| vec![("sandbox_spec_id", s)])
            .unwrap_or_default();
        let data = self
            .call_with(
                Method::POST,
                "/api/v1/sandboxes",
                &query,
                None,
                true,
                self.opts.init_timeout,
            )
            .await
            .map_err(|e| e.error)?;
        let id = data.get("id").and_then(Value::as_str).ok_or_else(|| {
            WorkspaceError::Invalid(format!("the sandbox answer has no id: {data}"))
        })?;
        let key = data
            .get("session_api_key")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok((id.to_string(), key))
    }

    async fn resume(&self, id: &str) -> Result<(), WorkspaceError> {
        self.call_with(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/resume"),
            &[],
            None,
            true,
            self.opts.init_timeout,
        )
        .await
        .map(drop)
        .map_err(|e| e.error)
    }

    async fn delete(&self, id: &str) -> Result<(), WorkspaceError> {
        self.call_with(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id}"),
            &[("sandbox_id", id)],
            None,
            true,
            SHORT_TIMEOUT,
        )
        .await
        .map(drop)
        .map_err(|e| e.error)
    }

    /// Polls the sandbox until it runs and its agent server answers
    /// `/health`; its agent-server URL and session key.
    async fn wait_running(&self, id: &str) -> Result<(String, Option<String>), WorkspaceError> {
        let mut backoff = Backoff::new(
            self.opts.poll_interval,
            Duration::from_secs(10),
            self.opts.init_timeout,
        );
        loop {
            let last = match self
                .call(Method::GET, "/api/v1/sandboxes", &[("id", id)], None, true)
                .await
            {
                Err(e) if !e.transient => return Err(e.error),
                Err(e) => e.error.to_string(),
                Ok(list) => {
                    let sandbox = list.get(0).filter(|s| !s.is_null()).cloned();
                    match sandbox {
                        None => format!("sandbox {id} not found"),
                        Some(s) => {
                            let status = s.get("status").and_then(Value::as_str).unwrap_or("");
                            match status {
                                "RUNNING" => match agent_server_url(&s) {
                                    // As the reference: running without an
                                    // agent-server URL is an error.
                                    None => {
                                        return Err(WorkspaceError::Invalid(format!(
                                            "agent server URL not found in sandbox {id}"
                                        )));
                                    }
                                    Some(url) => match health(&self.http, &url).await {
                                        Ok(()) => {
                                            let key = s
                                                .get("session_api_key")
                                                .and_then(Value::as_str)
                                                .map(str::to_string);
                                            return Ok((url, key));
                                        }
                                        Err(e) => e.to_string(),
                                    },
                                },
                                "ERROR" | "MISSING" => {
                                    return Err(WorkspaceError::Invalid(format!(
                                        "sandbox {id} failed with status {status}"
                                    )));
                                }
                                "PAUSED" => {
                                    self.resume(id).await?;
                                    "sandbox resuming".into()
                                }
                                other => format!("sandbox status {other}"),
                            }
                        }
                    }
                }
            };
            if !backoff.wait().await {
                return Err(WorkspaceError::Transport(format!(
                    "sandbox {id} did not become ready within {:?}: {last}",
                    self.opts.init_timeout
                )));
            }
        }
    }

    fn remote(&self, url: &str, key: Option<&str>) -> Result<RemoteWorkspace, WorkspaceError> {
        let client = AgentServerClient::builder(url)
            .session_api_key(key)
            .timeout(self.opts.api_timeout)
            .tls(self.opts.tls.clone())
            .build()
            .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
        Ok(RemoteWorkspace::with_client(
            client,
            self.opts.working_dir.clone(),
        ))
    }
}

/// The `AGENT_SERVER` URL of a sandbox answer (trailing `/` removed).
fn agent_server_url(sandbox: &Value) -> Option<String> {
    sandbox
        .get("exposed_urls")
        .and_then(Value::as_array)?
        .iter()
        .find(|u| u.get("name").and_then(Value::as_str) == Some(AGENT_SERVER))
        .and_then(|u| u.get("url").and_then(Value::as_str))
        .map(|u| u.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_server_url_is_the_named_exposed_url() {
        let s = json!({"exposed_urls": [
            {"name": "VSCODE", "url": "http://v"},
            {"name": "AGENT_SERVER", "url": "http://a:1/"},
        ]});
        assert_eq!(agent_server_url(&s).as_deref(), Some("http://a:1"));
        assert_eq!(agent_server_url(&json!({"exposed_urls": null})), None);
    }

    #[test]
    fn cloud_mcp_config_becomes_an_mcp_servers_map() {
        let cfg = json!({
            "sse_servers": [{"url": "http://s", "api_key": "k"}],
            "shttp_servers": [{"url": "http://h", "timeout": 30}, {"url": "http://h2", "api_key": ""}],
            "stdio_servers": [{"name": "fs", "command": "npx", "args": ["x"], "env": {"A": "1"}}],
        });
        let m = mcp_servers(Some(&cfg));
        assert_eq!(
            m["sse_0"],
            json!({"url": "http://s", "transport": "sse", "headers": {"Authorization": "Bearer k"}})
        );
        assert_eq!(
            m["shttp_0"],
            json!({"url": "http://h", "transport": "streamable-http", "timeout": 30})
        );
        assert_eq!(
            m["shttp_1"],
            json!({"url": "http://h2", "transport": "streamable-http"})
        );
        assert_eq!(
            m["fs"],
            json!({"command": "npx", "args": ["x"], "env": {"A": "1"}})
        );
        assert!(mcp_servers(Some(&json!("x"))).is_empty());
    }

    #[test]
    fn truthiness_follows_python() {
        assert!(!truthy(&json!("")) && !truthy(&json!(null)) && !truthy(&json!(0)));
        assert!(truthy(&json!("m")) && truthy(&json!(1)));
    }
}
