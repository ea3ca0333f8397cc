//! [`APIRemoteWorkspace`]: a workspace on a runtime of the OpenHands
//! Runtime API (the hosted one, or our control plane's `/v1/runtime`).
//!
//! As the reference's client does: `GET /sessions/{session_id}` first (a
//! running runtime is attached, a paused one resumed), else
//! `POST /start`; then `GET /sessions/{session_id}` until `pod_status` is
//! `ready` and the runtime's `/health` answers; the agent server is then
//! driven at the answered `url` with its `session_api_key`. Closing stops
//! the runtime (or pauses it with `pause_on_close`, or leaves it with
//! `keep_alive`). Every Runtime API call carries `X-API-Key`.

use crate::Workspace;
use crate::poll::{Backoff, health};
use crate::remote::RemoteWorkspace;
use crate::types::WorkspaceError;
use openhands_client::http::{HttpOptions, http_client};
use openhands_client::{AgentServerClient, TlsOptions};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Timeout of one agent-server request of the workspace.
const AGENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Shortest and longest pause between readiness polls.
const POLL_MIN: Duration = Duration::from_millis(250);
const POLL_MAX: Duration = Duration::from_secs(5);
/// Timeout of pause, stop and the `/health` probe (as the reference).
const SHORT_TIMEOUT: Duration = Duration::from_secs(30);

/// When the Runtime API pulls the image (`image_pull_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePullPolicy {
    /// Before every start.
    Always,
    /// When the image is not present (the reference's default).
    IfNotPresent,
    /// Never.
    Never,
}

impl ImagePullPolicy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::IfNotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }
}

/// The settings of an [`APIRemoteWorkspace`] (the reference's fields).
#[derive(Debug, Clone)]
pub struct APIRemoteWorkspaceOptions {
    /// Base URL of the Runtime API (`…/v1/runtime` on our control plane).
    pub runtime_api_url: String,
    /// The API key sent as `X-API-Key`.
    pub runtime_api_key: String,
    /// The agent-server image; `None` lets the Runtime API choose (our
    /// control plane's configured image, or its local agent server).
    pub server_image: Option<String>,
    /// When to pull `server_image` (sent only with an image).
    pub image_pull_policy: ImagePullPolicy,
    /// The session: the same id attaches to the same runtime.
    pub session_id: String,
    /// Where commands run and the agent works; `None`: the working
    /// directory the Runtime API answers, else `/workspace`.
    pub working_dir: Option<String>,
    /// Resource scaling (1, 2, 4 or 8).
    pub resource_factor: u8,
    /// The runtime class (`None`: the engine's default).
    pub runtime_class: Option<String>,
    /// User id the runtime runs as (`None`: the engine's).
    pub run_as_user: Option<u32>,
    /// Group id of the runtime's files.
    pub fs_group: Option<u32>,
    /// Longest wait for `POST /start` and `/resume`.
    pub init_timeout: Duration,
    /// Longest wait for the runtime to become ready.
    pub startup_wait_timeout: Duration,
    /// Timeout of the other Runtime API requests.
    pub api_timeout: Duration,
    /// Leave the runtime running on close.
    pub keep_alive: bool,
    /// Pause the runtime instead of stopping it on close.
    pub pause_on_close: bool,
    /// Names of this process's variables set in the runtime.
    pub forward_env: Vec<String>,
    /// Trusted certificates (Runtime API and agent server).
    pub tls: TlsOptions,
}

impl APIRemoteWorkspaceOptions {
    /// The reference's defaults for `runtime_api_url` and `runtime_api_key`
    /// (a new `agent-server-<uuid>` session id, the reference's timeouts).
    pub fn new(runtime_api_url: impl Into<String>, runtime_api_key: impl Into<String>) -> Self {
        Self {
            runtime_api_url: runtime_api_url.into(),
            runtime_api_key: runtime_api_key.into(),
            server_image: None,
            image_pull_policy: ImagePullPolicy::IfNotPresent,
            session_id: format!("agent-server-{}", uuid::Uuid::new_v4()),
            working_dir: None,
            resource_factor: 1,
            runtime_class: None,
            run_as_user: None,
            fs_group: None,
            init_timeout: Duration::from_secs(300),
            startup_wait_timeout: Duration::from_secs(300),
            api_timeout: Duration::from_secs(60),
            keep_alive: false,
            pause_on_close: false,
            forward_env: Vec::new(),
            tls: TlsOptions::default(),
        }
    }

    /// With `image` as the agent-server image.
    pub fn server_image(mut self, image: impl Into<String>) -> Self {
        self.server_image = Some(image.into());
        self
    }

    /// With this session id.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = id.into();
        self
    }

    /// The start request's body (the reference's payload; unset options
    /// are left out).
    pub fn start_payload(&self) -> Value {
        let mut body = Map::new();
        body.insert("session_id".into(), json!(self.session_id));
        if let Some(image) = &self.server_image {
            body.insert("image".into(), json!(image));
            body.insert(
                "image_pull_policy".into(),
                json!(self.image_pull_policy.as_str()),
            );
        }
        let env: Map<String, Value> = self
            .forward_env
            .iter()
            .filter_map(|name| crate::exec::env::host_var(name).map(|v| (name.clone(), json!(v))))
            .collect();
        body.insert("environment".into(), Value::Object(env));
        if let Some(u) = self.run_as_user {
            body.insert("run_as_user".into(), json!(u));
        }
        if let Some(g) = self.fs_group {
            body.insert("fs_group".into(), json!(g));
        }
        if let Some(class) = &self.runtime_class {
            body.insert("runtime_class".into(), json!(class));
        }
        if self.resource_factor != 1 {
            body.insert("resource_factor".into(), json!(self.resource_factor));
        }
        Value::Object(body)
    }
}

/// What a Runtime API answer says of a runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// The runtime's id.
    pub runtime_id: String,
    /// Base URL of its agent server.
    pub url: String,
    /// Its agent server's session key.
    pub session_api_key: Option<String>,
    /// `running`, `paused`, …
    pub status: String,
    /// Where the Runtime API says the agent works (ours answers it).
    pub working_dir: Option<String>,
}

impl RuntimeInfo {
    fn parse(v: &Value) -> Result<Self, WorkspaceError> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(runtime_id), Some(url)) =
            (text("runtime_id").or_else(|| text("id")), text("url"))
        else {
            return Err(WorkspaceError::Invalid(format!(
                "invalid runtime answer (no runtime_id or url): {v}"
            )));
        };
        Ok(Self {
            runtime_id,
            url: url.trim_end_matches('/').to_string(),
            session_api_key: text("session_api_key"),
            status: text("status").unwrap_or_default(),
            working_dir: text("working_dir"),
        })
    }
}

/// A workspace on a runtime of the OpenHands Runtime API (the
/// reference's `APIRemoteWorkspace`).
pub struct APIRemoteWorkspace {
    opts: APIRemoteWorkspaceOptions,
    api: reqwest::Client,
    runtime: RuntimeInfo,
    remote: RemoteWorkspace,
    closed: bool,
}

impl std::fmt::Debug for APIRemoteWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("APIRemoteWorkspace")
            .field("runtime_api_url", &self.opts.runtime_api_url)
            .field("session_id", &self.opts.session_id)
            .field("runtime_id", &self.runtime.runtime_id)
            .field("url", &self.runtime.url)
            .finish_non_exhaustive()
    }
}

impl APIRemoteWorkspace {
    /// Attaches to the session's runtime (resuming a paused one) or starts
    /// one, and waits until it is ready.
    pub async fn start(mut opts: APIRemoteWorkspaceOptions) -> Result<Self, WorkspaceError> {
        if ![1, 2, 4, 8].contains(&opts.resource_factor) {
            return Err(WorkspaceError::Invalid(format!(
                "resource_factor must be 1, 2, 4, or 8, got {}",
                opts.resource_factor
            )));
        }
        opts.runtime_api_url = opts.runtime_api_url.trim_end_matches('/').to_string();
        let api = http_client(&HttpOptions {
            timeout: None,
            connect_timeout: Some(Duration::from_secs(10)),
            tls: opts.tls.clone(),
            observability_headers: false,
            ..HttpOptions::default()
        })
        .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
        let api_ws = Api {
            opts: &opts,
            http: &api,
        };
        let runtime = match api_ws.existing().await? {
            Some(r) => r,
            None => api_ws.start_runtime().await?,
        };
        // From here on a failure releases what was started.
        let ready = async {
            api_ws.wait_alive(&runtime).await?;
            let working_dir = opts
                .working_dir
                .clone()
                .or_else(|| runtime.working_dir.clone())
                .unwrap_or_else(|| "/workspace".into());
            let client = AgentServerClient::builder(&runtime.url)
                .session_api_key(runtime.session_api_key.as_deref())
                .timeout(AGENT_TIMEOUT)
                .tls(opts.tls.clone())
                .build()
                .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
            Ok::<_, WorkspaceError>(RemoteWorkspace::with_client(client, working_dir))
        }
        .await;
        match ready {
            Ok(remote) => Ok(Self {
                opts,
                api,
                runtime,
                remote,
                closed: false,
            }),
            Err(e) => {
                if !opts.keep_alive {
                    let _ = api_ws.action("stop", &runtime.runtime_id).await;
                }
                Err(e)
            }
        }
    }

    /// The agent server's workspace (commands, files, git).
    pub fn workspace(&self) -> &RemoteWorkspace {
        &self.remote
    }

    /// The runtime's id.
    pub fn runtime_id(&self) -> &str {
        &self.runtime.runtime_id
    }

    /// The runtime's agent-server URL.
    pub fn host(&self) -> &str {
        &self.runtime.url
    }

    /// The agent server's session key.
    pub fn api_key(&self) -> Option<&str> {
        self.runtime.session_api_key.as_deref()
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.opts.session_id
    }

    fn api(&self) -> Api<'_> {
        Api {
            opts: &self.opts,
            http: &self.api,
        }
    }

    /// `GET /sessions/{session_id}`: the runtime as the Runtime API
    /// reports it now.
    pub async fn status(&self) -> Result<Value, WorkspaceError> {
        self.api()
            .session()
            .await?
            .ok_or_else(|| WorkspaceError::Http {
                status: 404,
                body: format!("no runtime for session {}", self.opts.session_id),
            })
    }

    /// Pauses the runtime (`POST /pause`).
    pub async fn pause(&self) -> Result<(), WorkspaceError> {
        self.api()
            .action("pause", &self.runtime.runtime_id)
            .await
            .map(drop)
    }

    /// Resumes the runtime (`POST /resume`) and waits until it is ready.
    pub async fn resume(&self) -> Result<(), WorkspaceError> {
        let api = self.api();
        api.action("resume", &self.runtime.runtime_id).await?;
        api.wait_alive(&self.runtime).await
    }

    /// Releases the runtime as the options say: stopped, paused
    /// (`pause_on_close`) or left running (`keep_alive`).
    pub async fn close(mut self) -> Result<(), WorkspaceError> {
        self.closed = true;
        if self.opts.keep_alive {
            return Ok(());
        }
        let action = if self.opts.pause_on_close {
            "pause"
        } else {
            "stop"
        };
        self.api()
            .action(action, &self.runtime.runtime_id)
            .await
            .map(drop)
    }
}

/// Dropped without [`APIRemoteWorkspace::close`]: the runtime is released
/// in the background (as the reference's `__del__`), when a tokio
/// runtime is at hand.
impl Drop for APIRemoteWorkspace {
    fn drop(&mut self) {
        if self.closed || self.opts.keep_alive {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                runtime = %self.runtime.runtime_id,
                "an APIRemoteWorkspace was dropped outside a tokio runtime; its runtime is left running"
            );
            return;
        };
        let action = if self.opts.pause_on_close {
            "pause"
        } else {
            "stop"
        };
        let (opts, http, id) = (
            self.opts.clone(),
            self.api.clone(),
            self.runtime.runtime_id.clone(),
        );
        handle.spawn(async move {
            let api = Api {
                opts: &opts,
                http: &http,
            };
            if let Err(e) = api.action(action, &id).await {
                tracing::warn!(runtime = %id, "releasing the runtime on drop failed: {e}");
            }
        });
    }
}

/// The remote workspace of a runtime (what the SDK's `Conversation`
/// picks a remote conversation from).
impl From<&APIRemoteWorkspace> for Workspace {
    fn from(w: &APIRemoteWorkspace) -> Self {
        Workspace::Remote(w.remote.clone())
    }
}

/// The Runtime API calls.
struct Api<'a> {
    opts: &'a APIRemoteWorkspaceOptions,
    http: &'a reqwest::Client,
}

impl Api<'_> {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<(u16, Value), WorkspaceError> {
        let url = format!("{}{path}", self.opts.runtime_api_url);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .timeout(timeout)
            .header("X-API-Key", &self.opts.runtime_api_key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| WorkspaceError::Transport(format!("{method} {url}: {e}")))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| WorkspaceError::Transport(format!("{method} {url}: {e}")))?;
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, v))
    }

    fn check(status: u16, v: Value) -> Result<Value, WorkspaceError> {
        if (200..300).contains(&status) {
            Ok(v)
        } else {
            Err(WorkspaceError::Http {
                status,
                body: v.to_string(),
            })
        }
    }

    /// The session's runtime, `None` on 404.
    async fn session(&self) -> Result<Option<Value>, WorkspaceError> {
        let path = format!("/sessions/{}", self.opts.session_id);
        let (status, v) = self
            .send(reqwest::Method::GET, &path, None, self.opts.api_timeout)
            .await?;
        if status == 404 {
            return Ok(None);
        }
        Self::check(status, v).map(Some)
    }

    /// A running runtime of the session (a paused one resumed first).
    async fn existing(&self) -> Result<Option<RuntimeInfo>, WorkspaceError> {
        let Some(v) = self.session().await? else {
            return Ok(None);
        };
        match v.get("status").and_then(Value::as_str) {
            Some("running") => Ok(Some(RuntimeInfo::parse(&v)?)),
            Some("paused") => {
                let r = RuntimeInfo::parse(&v)?;
                match self.action("resume", &r.runtime_id).await {
                    Ok(_) => Ok(Some(r)),
                    Err(e) => {
                        tracing::warn!(runtime = %r.runtime_id, "resuming failed: {e}");
                        Ok(None)
                    }
                }
            }
            _ => Ok(None),
        }
    }

    async fn start_runtime(&self) -> Result<RuntimeInfo, WorkspaceError> {
        let (status, v) = self
            .send(
                reqwest::Method::POST,
                "/start",
                Some(self.opts.start_payload()),
                self.opts.init_timeout,
            )
            .await?;
        RuntimeInfo::parse(&Self::check(status, v)?)
    }

    /// `POST /{action}` with the runtime id.
    async fn action(&self, action: &str, runtime_id: &str) -> Result<Value, WorkspaceError> {
        let timeout = if action == "resume" {
            self.opts.init_timeout
        } else {
            SHORT_TIMEOUT
        };
        let (status, v) = self
            .send(
                reqwest::Method::POST,
                &format!("/{action}"),
                Some(json!({"runtime_id": runtime_id})),
                timeout,
            )
            .await?;
        Self::check(status, v)
    }

    /// Polls until `pod_status` is `ready` and `/health` answers 2xx;
    /// a failed runtime ends the wait at once.
    async fn wait_alive(&self, r: &RuntimeInfo) -> Result<(), WorkspaceError> {
        let mut backoff = Backoff::new(POLL_MIN, POLL_MAX, self.opts.startup_wait_timeout);
        loop {
            let last = match self.session().await? {
                None => "the runtime was not found".to_string(),
                Some(v) => {
                    let pod = v
                        .get("pod_status")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_lowercase();
                    match pod.as_str() {
                        "ready" => match health(self.http, &r.url).await {
                            Ok(()) => return Ok(()),
                            Err(e) => e.to_string(),
                        },
                        "failed" | "unknown" | "crashloopbackoff" => {
                            let logs = v.get("pod_logs").and_then(Value::as_str).unwrap_or("");
                            return Err(WorkspaceError::Invalid(format!(
                                "runtime failed (status: {pod}){}",
                                if logs.is_empty() {
                                    String::new()
                                } else {
                                    format!("; pod logs: {logs}")
                                }
                            )));
                        }
                        other => format!("runtime not yet ready (status: {other})"),
                    }
                }
            };
            if !backoff.wait().await {
                return Err(WorkspaceError::Transport(format!(
                    "the runtime did not become ready within {:?}: {last}",
                    self.opts.startup_wait_timeout
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_payload_sends_only_what_is_set() {
        let opts = APIRemoteWorkspaceOptions::new("http://x/v1/runtime/", "k").session_id("s1");
        let p = opts.start_payload();
        assert_eq!(p, json!({"session_id": "s1", "environment": {}}));
        let mut opts = opts.server_image("img:1");
        opts.image_pull_policy = ImagePullPolicy::Never;
        opts.run_as_user = Some(10001);
        opts.runtime_class = Some("runc".into());
        let p = opts.start_payload();
        assert_eq!(p["image"], "img:1");
        assert_eq!(p["image_pull_policy"], "Never");
        assert_eq!(p["run_as_user"], 10001);
        assert_eq!(p["runtime_class"], "runc");
        assert!(p.get("resource_factor").is_none());
    }

    #[test]
    fn a_runtime_answer_needs_an_id_and_a_url() {
        let r = RuntimeInfo::parse(&json!({"id": "r", "url": "http://h:1/", "status": "running"}))
            .unwrap();
        assert_eq!(r.runtime_id, "r");
        assert_eq!(r.url, "http://h:1");
        assert!(RuntimeInfo::parse(&json!({"runtime_id": "r"})).is_err());
    }
}
