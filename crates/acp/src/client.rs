//! One ACP server process and its session: started through the execution
//! layer (environment policy, own process group, killed as a group on
//! close), `initialize` → optional `authenticate` → `session/load` or
//! `session/new` → model and mode selection, all within
//! `acp_startup_timeout`; prompts with an inactivity deadline; cancel;
//! live model switches.

use crate::auth;
use crate::config::AcpAgentConfig;
use crate::error::AcpError;
use crate::models::{AcpModelInfo, extract_session_models};
use crate::providers;
use crate::rpc::{IncomingHandler, Notification, RpcConnection, RpcError};
use openhands_workspace::exec::{ChildEnv, GroupChild, ProcessSpec, Sandbox};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a cancelled prompt may take to answer before it is abandoned.
pub const CANCEL_DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `authenticate` may take.
const AUTH_TIMEOUT: Duration = Duration::from_secs(30);
/// Grace between SIGTERM and SIGKILL when the server is stopped.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Longest stderr line logged.
const MAX_LOG_LINE: usize = 4000;

/// A session to try to resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorSession {
    /// Its id.
    pub session_id: String,
    /// Whether it selected models through config options.
    pub via_config_option: bool,
}

/// Where and how to start the server.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The session's working directory (also the process's).
    pub cwd: PathBuf,
    /// The process's whole environment.
    pub env: ChildEnv,
    /// The sandbox to run in, if any.
    pub sandbox: Option<Sandbox>,
    /// Session to resume first (falls back to a new one if refused).
    pub prior_session: Option<PriorSession>,
    /// MCP servers passed to the session (ACP `McpServer` objects).
    pub mcp_servers: Vec<Value>,
}

/// What the server and session reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionState {
    /// `agentInfo.name`.
    pub agent_name: String,
    /// `agentInfo.version`.
    pub agent_version: String,
    /// The live session.
    pub session_id: String,
    /// The model the session runs, when known.
    pub current_model_id: Option<String>,
    /// Models the session offers (`None`: not reported).
    pub available_models: Option<Vec<AcpModelInfo>>,
    /// Models are selected through `session/set_config_option`.
    pub via_config_option: bool,
    /// `acp_model` reached the server.
    pub model_override_applied: bool,
    /// The prior session was resumed.
    pub resumed: bool,
}

impl SessionState {
    /// Whether a live model switch is offered (known providers that
    /// declare it).
    pub fn supports_runtime_model_switch(&self) -> bool {
        providers::by_agent_name(&self.agent_name).is_some_and(|p| p.supports_runtime_model_switch)
    }
}

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptOutcome {
    /// The server answered; `stop_reason` as it said.
    Completed {
        /// `end_turn`, `max_tokens`, `refusal`, ...
        stop_reason: Option<String>,
        /// The response's `usage`, if any.
        usage: Option<Value>,
        /// The response's `_meta`, if any (gemini-cli's token quota).
        meta: Option<Value>,
    },
    /// The prompt was cancelled (by us, or the server said `cancelled`).
    Cancelled,
}

struct Inner {
    rpc: RpcConnection,
    child: tokio::sync::Mutex<Option<GroupChild>>,
    notes: tokio::sync::Mutex<mpsc::UnboundedReceiver<Notification>>,
    state: Mutex<SessionState>,
    prompt_timeout: Duration,
    startup_timeout: Duration,
    /// The last cumulative cost seen per session, and the last context
    /// window (kept for the server's life, as the reference's bridge does).
    usage: Mutex<UsageMemory>,
    /// The session's working directory, for forks.
    cwd: String,
}

#[derive(Default)]
struct UsageMemory {
    last_cost_by_session: std::collections::HashMap<String, f64>,
    context_window: u64,
}

/// A running ACP server with one session. Cheap to clone.
#[derive(Clone)]
pub struct AcpClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClient")
            .field("state", &*self.inner.state.lock())
            .finish_non_exhaustive()
    }
}

/// Answers the server's requests the way the reference's headless bridge
/// does: permissions are granted with the first option offered,
/// elicitations declined, file and terminal requests refused (the server
/// handles its own).
fn incoming_handler() -> IncomingHandler {
    Arc::new(|method, params| match method {
        "session/request_permission" => {
            let option = params
                .get("options")
                .and_then(Value::as_array)
                .and_then(|o| o.first())
                .and_then(|o| o.get("optionId"))
                .and_then(Value::as_str)
                .unwrap_or("allow_once");
            tracing::info!(option, "ACP: permission granted");
            Ok(json!({"outcome": {"outcome": "selected", "optionId": option}}))
        }
        "elicitation/create" | "session/elicitation" => Ok(json!({"action": "decline"})),
        m if m.starts_with("fs/") => Err((-32603, "ACP server handles file operations".into())),
        m if m.starts_with("terminal/") => {
            Err((-32603, "ACP server handles terminal operations".into()))
        }
        m => Err((-32601, format!("Method not found: {m}"))),
    })
}

impl AcpClient {
    /// Starts the server and its session within `acp_startup_timeout`; on
    /// any failure the process is stopped before the error returns.
    pub async fn start(config: &AcpAgentConfig, opts: LaunchOptions) -> Result<Self, AcpError> {
        let argv = config.argv();
        let Some((program, args)) = argv.split_first() else {
            return Err(AcpError::Spawn("acp_command is empty".into()));
        };
        let spec = ProcessSpec::new(program, opts.env.clone())
            .args(args.iter().cloned())
            .cwd(&opts.cwd)
            .sandbox(opts.sandbox.as_ref())
            .piped_stdin();
        let mut child = GroupChild::spawn(&spec)
            .map_err(|e| AcpError::Spawn(format!("cannot start ACP server '{program}': {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
            child.terminate(STOP_GRACE).await;
            return Err(AcpError::Spawn("ACP server pipes unavailable".into()));
        };
        if let Some(stderr) = child.take_stderr() {
            log_stderr(program.clone(), stderr);
        }
        tracing::info!(pid = ?child.id(), %program, "ACP server started");
        let (rpc, notes) = RpcConnection::start(stdout, stdin, incoming_handler());
        let client = Self {
            inner: Arc::new(Inner {
                rpc,
                child: tokio::sync::Mutex::new(Some(child)),
                notes: tokio::sync::Mutex::new(notes),
                state: Mutex::new(SessionState::default()),
                prompt_timeout: config.prompt_timeout,
                startup_timeout: config.startup_timeout,
                usage: Mutex::new(UsageMemory::default()),
                cwd: opts.cwd.to_string_lossy().into_owned(),
            }),
        };
        let started =
            tokio::time::timeout(config.startup_timeout, client.handshake(config, &opts)).await;
        let result = match started {
            Ok(Ok(state)) => {
                *client.inner.state.lock() = state;
                return Ok(client);
            }
            // A request of the handshake that timed out is the startup limit too.
            Ok(Err(AcpError::Rpc(RpcError::Timeout { .. }))) | Err(_) => {
                AcpError::StartupTimeout(config.startup_timeout.as_secs_f64())
            }
            Ok(Err(e)) => e,
        };
        client.close().await;
        Err(result)
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, AcpError> {
        Ok(self
            .inner
            .rpc
            .request(method, params, self.inner.startup_timeout)
            .await?)
    }

    async fn handshake(
        &self,
        config: &AcpAgentConfig,
        opts: &LaunchOptions,
    ) -> Result<SessionState, AcpError> {
        let init = self
            .call(
                "initialize",
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": {
                        "fs": {"readTextFile": false, "writeTextFile": false},
                        "terminal": false
                    },
                    "clientInfo": {"name": "openhands-rs", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        let info = init.get("agentInfo");
        let text = |k: &str| {
            info.and_then(|i| i.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut state = SessionState {
            agent_name: text("name"),
            agent_version: text("version"),
            ..SessionState::default()
        };
        tracing::info!(agent_name = %state.agent_name, agent_version = %state.agent_version, "ACP server initialized");
        let methods = init
            .get("authMethods")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let auth_note = self
            .authenticate(config, opts, &methods, &state.agent_name)
            .await?;
        // A session refused for want of credentials says what was missing.
        let explain = |e: AcpError| match &auth_note {
            Some(note) if e.indicates_auth() => AcpError::Auth(format!("{}; {note}", e.detail())),
            _ => e,
        };
        let cwd = opts.cwd.to_string_lossy().into_owned();
        let mut response = None;
        if let Some(prior) = &opts.prior_session {
            match self
                .call(
                    "session/load",
                    json!({"sessionId": prior.session_id, "cwd": cwd, "mcpServers": opts.mcp_servers}),
                )
                .await
            {
                Ok(r) => {
                    state.session_id = prior.session_id.clone();
                    state.resumed = true;
                    let models = extract_session_models(&r, prior.via_config_option);
                    state.current_model_id = models.current_model_id;
                    state.available_models = models.available_models;
                    state.via_config_option = models.via_config_option;
                    response = Some(r);
                }
                Err(AcpError::Rpc(RpcError::Remote { message, .. })) => {
                    tracing::warn!(%message, "ACP session/load refused; starting a fresh session");
                }
                Err(e) => return Err(explain(e)),
            }
        }
        if response.is_none() {
            let r = self
                .call(
                    "session/new",
                    json!({"cwd": cwd, "mcpServers": opts.mcp_servers}),
                )
                .await
                .map_err(explain)?;
            state.session_id = r
                .get("sessionId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| AcpError::Invalid("session/new returned no sessionId".into()))?
                .to_string();
            let models = extract_session_models(&r, false);
            state.current_model_id = models.current_model_id;
            state.available_models = models.available_models;
            state.via_config_option = models.via_config_option;
        }
        if let Some(model) = &config.model {
            match self.apply_model(&state, model).await {
                Ok(()) => {
                    state.model_override_applied = true;
                    state.current_model_id = Some(model.clone());
                }
                Err(AcpError::Rpc(RpcError::Remote { message, .. })) => {
                    tracing::warn!(%model, %message, "ACP server refused the model; using its default");
                }
                Err(e) => return Err(e),
            }
        }
        let mode = config.session_mode.clone().or_else(|| {
            providers::by_agent_name(&state.agent_name)
                .and_then(|p| p.default_session_mode.map(str::to_owned))
        });
        if let Some(mode) = mode {
            self.call(
                "session/set_mode",
                json!({"sessionId": state.session_id, "modeId": mode}),
            )
            .await?;
        }
        Ok(state)
    }

    /// Authenticates with the method [`auth::select_method`] picks (API-key
    /// methods of gemini-cli carry the gateway base URL). When none fits and
    /// no credential is configured out of band, returns why, for the error
    /// of a refused session.
    async fn authenticate(
        &self,
        config: &AcpAgentConfig,
        opts: &LaunchOptions,
        methods: &[Value],
        agent_name: &str,
    ) -> Result<Option<String>, AcpError> {
        if methods.is_empty() {
            return Ok(None);
        }
        let home = openhands_workspace::exec::env::host_var_os("HOME").map(PathBuf::from);
        let provider = providers::resolve(config.server.as_deref(), &config.command)
            .or_else(|| providers::by_agent_name(agent_name));
        let specs = crate::files::active_file_secrets(config);
        let (offered_methods, env) = (methods.to_vec(), opts.env.clone());
        // Credential files are read on a blocking thread.
        let decision = tokio::task::spawn_blocking(move || {
            auth::decide(&offered_methods, &env, home.as_deref(), provider, &specs)
        })
        .await
        .map_err(|e| AcpError::Auth(format!("choosing an ACP auth method failed: {e}")))?;
        let offered = || -> Vec<&str> {
            methods
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .collect()
        };
        let method = match decision {
            auth::Decision::Method(method) => method,
            auth::Decision::Configured(configured) => {
                tracing::info!(
                    offered = ?offered(),
                    ?configured,
                    "ACP auth methods cannot be performed here; using the configured credentials"
                );
                return Ok(None);
            }
            auth::Decision::Missing(reason) => {
                let note = format!(
                    "ACP server offers auth methods [{}] but no matching credential is available ({reason})",
                    offered().join(", ")
                );
                tracing::warn!("{note} — session creation may fail");
                return Ok(Some(note));
            }
        };
        tracing::info!(%method, "ACP: authenticating");
        let mut params = json!({"methodId": method});
        if method == "gemini-api-key"
            && let Some(var) = providers::by_agent_name(agent_name).and_then(|p| p.base_url_env_var)
            && let Some(url) = opts.env.get(var).filter(|u| !u.is_empty())
        {
            params["_meta"] = json!({"gateway": {"baseUrl": url}});
        }
        match self
            .inner
            .rpc
            .request("authenticate", params, AUTH_TIMEOUT)
            .await
        {
            Ok(_) => Ok(None),
            Err(RpcError::Timeout { .. }) if method == "chat-gpt" => Err(AcpError::Auth(
                "ChatGPT authentication did not complete in time. Please sign in again.".into(),
            )),
            Err(RpcError::Timeout { .. }) => Err(AcpError::Auth(format!(
                "ACP authentication with '{method}' timed out after {}s.",
                AUTH_TIMEOUT.as_secs()
            ))),
            Err(e) => {
                let e = AcpError::Rpc(e);
                if method == "chat-gpt" && e.indicates_auth() {
                    Err(AcpError::Auth(
                        "ChatGPT authentication needs to be refreshed.".into(),
                    ))
                } else {
                    Err(e)
                }
            }
        }
    }

    async fn apply_model(&self, state: &SessionState, model: &str) -> Result<(), AcpError> {
        if state.via_config_option {
            for (config_id, value) in model_config_options(&state.agent_name, model) {
                self.call(
                    "session/set_config_option",
                    json!({"sessionId": state.session_id, "configId": config_id, "value": value}),
                )
                .await?;
            }
            Ok(())
        } else {
            self.call(
                "session/set_model",
                json!({"sessionId": state.session_id, "modelId": model}),
            )
            .await
            .map(|_| ())
        }
    }

    /// What the server and session reported (the current model follows
    /// switches).
    pub fn state(&self) -> SessionState {
        self.inner.state.lock().clone()
    }

    /// Whether the connection is still up.
    pub fn is_alive(&self) -> bool {
        !self.inner.rpc.is_closed()
    }

    /// Sends one prompt and feeds every `session/update` to `on_update`
    /// until the answer; an inactivity of `acp_prompt_timeout` fails it
    /// (after a `session/cancel`), `cancel` cancels it.
    pub async fn prompt(
        &self,
        blocks: Vec<Value>,
        cancel: &CancellationToken,
        on_update: &mut (dyn FnMut(&Value) + Send),
    ) -> Result<PromptOutcome, AcpError> {
        let session_id = self.inner.state.lock().session_id.clone();
        self.prompt_session(&session_id, blocks, cancel, on_update)
            .await
    }

    /// Forks the live session (`session/fork`, as the reference's
    /// `ask_agent` does) and returns the fork's id: a copy of the
    /// conversation so far that the main session never sees.
    pub async fn fork_session(&self) -> Result<String, AcpError> {
        let session_id = self.inner.state.lock().session_id.clone();
        let r = self
            .call(
                "session/fork",
                json!({"sessionId": session_id, "cwd": self.inner.cwd, "mcpServers": []}),
            )
            .await?;
        r.get("sessionId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| AcpError::Invalid("session/fork answered without a sessionId".into()))
    }

    /// [`AcpClient::prompt`] on the session `session_id` (the live one or
    /// a fork); only that session's updates reach `on_update`. One prompt
    /// at a time per connection.
    pub async fn prompt_session(
        &self,
        session_id: &str,
        blocks: Vec<Value>,
        cancel: &CancellationToken,
        on_update: &mut (dyn FnMut(&Value) + Send),
    ) -> Result<PromptOutcome, AcpError> {
        let session_id = session_id.to_string();
        let mut on_update = |params: &Value| {
            let other = params
                .get("sessionId")
                .and_then(Value::as_str)
                .is_some_and(|id| id != session_id);
            if !other {
                on_update(params);
            }
        };
        let on_update = &mut on_update;
        let mut notes = self.inner.notes.lock().await;
        // Updates that arrived between turns belong to no turn.
        while notes.try_recv().is_ok() {}
        let (id, mut rx) = self
            .inner
            .rpc
            .begin(
                "session/prompt",
                json!({"sessionId": session_id, "prompt": blocks}),
            )
            .await?;
        let idle = self.inner.prompt_timeout;
        let mut last = Instant::now();
        let mut notes_open = true;
        let mut saw_usage = false;
        let answer = loop {
            tokio::select! {
                biased;
                n = notes.recv(), if notes_open => match n {
                    Some(n) => {
                        if n.method == "session/update" {
                            last = Instant::now();
                            saw_usage |= is_usage_update(&n.params);
                            on_update(&n.params);
                        }
                    }
                    None => notes_open = false,
                },
                r = &mut rx => break r,
                _ = tokio::time::sleep_until(last + idle) => {
                    self.send_cancel(&session_id).await;
                    return Err(AcpError::IdleTimeout(idle.as_secs_f64()));
                }
                _ = cancel.cancelled() => {
                    self.send_cancel(&session_id).await;
                    // Let the server wind the prompt down briefly.
                    let _ = self.inner.rpc.finish("session/prompt", id, rx, CANCEL_DRAIN_TIMEOUT).await;
                    while notes.try_recv().is_ok() {}
                    return Ok(PromptOutcome::Cancelled);
                }
            }
        };
        // Updates queued before the answer belong to this turn.
        while let Ok(n) = notes.try_recv() {
            if n.method == "session/update" {
                saw_usage |= is_usage_update(&n.params);
                on_update(&n.params);
            }
        }
        // The turn's usage update normally precedes the answer; a server
        // that sends it later gets a short grace, as in the reference.
        if answer.as_ref().is_ok_and(Result::is_ok) && !saw_usage && notes_open {
            let deadline = Instant::now() + usage_update_timeout();
            while let Ok(Some(n)) = tokio::time::timeout_at(deadline, notes.recv()).await {
                if n.method == "session/update" {
                    let usage = is_usage_update(&n.params);
                    on_update(&n.params);
                    if usage {
                        break;
                    }
                }
            }
        }
        let response = match answer {
            Ok(r) => r?,
            Err(_) => {
                return Err(AcpError::Rpc(RpcError::Closed(
                    self.inner
                        .rpc
                        .close_reason()
                        .unwrap_or_else(|| "ACP connection closed".into()),
                )));
            }
        };
        let stop_reason = response
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if stop_reason.as_deref() == Some("cancelled") {
            return Ok(PromptOutcome::Cancelled);
        }
        Ok(PromptOutcome::Completed {
            stop_reason,
            usage: response.get("usage").cloned().filter(|u| !u.is_null()),
            meta: response.get("_meta").cloned().filter(|u| !u.is_null()),
        })
    }

    /// Notes a turn's `usage_update`: remembers the context window and
    /// returns the cost added since the session's previous cumulative cost
    /// (0 when it did not grow).
    pub fn note_usage(&self, session_id: &str, update: &crate::usage::UsageUpdate) -> f64 {
        let mut memory = self.inner.usage.lock();
        memory.context_window = update.size;
        let Some(total) = update.cost else {
            return 0.0;
        };
        let last = memory
            .last_cost_by_session
            .insert(session_id.to_string(), total)
            .unwrap_or(0.0);
        (total - last).max(0.0)
    }

    /// The last context window a `usage_update` reported (0: none yet).
    pub fn context_window(&self) -> u64 {
        self.inner.usage.lock().context_window
    }

    async fn send_cancel(&self, session_id: &str) {
        if let Err(e) = self
            .inner
            .rpc
            .notify("session/cancel", json!({"sessionId": session_id}))
            .await
        {
            tracing::warn!(error = %e, "ACP: session/cancel not sent");
        }
    }

    /// Switches the live session's model (within `acp_prompt_timeout`).
    /// A server refusal is [`AcpError::Invalid`] naming the call; a timeout
    /// is [`RpcError::Timeout`].
    pub async fn set_model(&self, model: &str) -> Result<(), AcpError> {
        if model.trim().is_empty() {
            return Err(AcpError::Invalid("model must be a non-empty string".into()));
        }
        let state = self.state();
        if let Some(p) = providers::by_agent_name(&state.agent_name)
            && !p.supports_runtime_model_switch
        {
            return Err(AcpError::Invalid(format!(
                "ACP provider '{}' does not support runtime model switching.",
                p.key
            )));
        }
        let switched =
            tokio::time::timeout(self.inner.prompt_timeout, self.apply_model(&state, model)).await;
        match switched {
            Err(_) => Err(AcpError::Rpc(RpcError::Timeout {
                method: "session/set_model".into(),
                secs: self.inner.prompt_timeout.as_secs_f64(),
            })),
            Ok(Err(AcpError::Rpc(RpcError::Remote {
                code,
                message,
                data,
            }))) if code != -32603 => {
                let method = if state.via_config_option {
                    "set_config_option(model)"
                } else {
                    "set_session_model"
                };
                let e = AcpError::Rpc(RpcError::Remote {
                    code,
                    message,
                    data,
                });
                Err(AcpError::Invalid(format!(
                    "ACP server rejected {method}(model='{model}'): {}",
                    e.detail()
                )))
            }
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => {
                self.inner.state.lock().current_model_id = Some(model.to_string());
                Ok(())
            }
        }
    }

    /// Stops the server: the connection closes and the process group gets
    /// SIGTERM, then SIGKILL after a grace period; the process is reaped.
    pub async fn close(&self) {
        self.inner.rpc.close("ACP session closed");
        let child = self.inner.child.lock().await.take();
        if let Some(mut child) = child {
            child.terminate(STOP_GRACE).await;
        }
    }
}

/// The config options that select `model`: codex takes a trailing
/// `/<effort>` as its separate reasoning-effort option.
fn model_config_options(agent_name: &str, model: &str) -> Vec<(&'static str, String)> {
    const EFFORTS: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];
    if providers::by_agent_name(agent_name).is_some_and(|p| p.key == "codex")
        && let Some((base, effort)) = model.rsplit_once('/')
        && !base.is_empty()
        && EFFORTS.contains(&effort)
    {
        return vec![
            ("model", base.to_string()),
            ("reasoning_effort", effort.to_string()),
        ];
    }
    vec![("model", model.to_string())]
}

/// Whether a `session/update` carries a `usage_update`.
fn is_usage_update(params: &Value) -> bool {
    params
        .get("update")
        .and_then(|u| u.get("sessionUpdate"))
        .and_then(Value::as_str)
        == Some("usage_update")
}

/// How long to wait for a late `usage_update` after the answer
/// (`ACP_USAGE_UPDATE_TIMEOUT`, 2 s).
fn usage_update_timeout() -> Duration {
    openhands_workspace::exec::env::host_var("ACP_USAGE_UPDATE_TIMEOUT")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_secs(2))
}

fn log_stderr(program: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line: String = line.chars().take(MAX_LOG_LINE).collect();
            tracing::info!(target: "openhands_acp::stderr", server = %program, "{line}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_splits_the_reasoning_effort() {
        assert_eq!(
            model_config_options("codex-acp", "gpt-5.5/high"),
            [
                ("model", "gpt-5.5".to_string()),
                ("reasoning_effort", "high".to_string())
            ]
        );
        assert_eq!(
            model_config_options("other", "gpt-5.5/high"),
            [("model", "gpt-5.5/high".to_string())]
        );
    }

    #[test]
    fn permissions_take_the_first_option_and_fs_is_refused() {
        let h = incoming_handler();
        let out = h(
            "session/request_permission",
            &json!({"options": [{"optionId": "yes", "kind": "allow_once", "name": "Yes"}]}),
        )
        .unwrap();
        assert_eq!(out["outcome"]["optionId"], "yes");
        assert!(h("fs/read_text_file", &json!({})).is_err());
        assert_eq!(h("x/y", &json!({})).unwrap_err().0, -32601);
    }
}
