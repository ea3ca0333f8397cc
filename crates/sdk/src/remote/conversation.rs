//! [`RemoteConversation`]: a conversation that lives on an agent server
//! (ours or the reference), driven over its REST API, its events mirrored
//! through the event socket.

use super::completion_logs;
use super::error::RemoteError;
use super::http::ApiClient;
use super::hub::Hub;
use super::socket::{EventSocket, SocketState};
use super::sync::sync_events;
use futures::Stream;
use openhands_client::TlsOptions;
use openhands_protocol::conversations::{
    AskAgentRequest, ConfirmationResponseRequest, ExecuteToolRequest, ExecuteToolResponse,
    ForkConversationRequest, NavigateConversationRequest, SendMessageRequest,
    StartConversationRequest, UpdateSecretsRequest,
};
use openhands_wire::event::{Event, EventBody};
use openhands_wire::message::Message;
use openhands_wire::state::ExecutionStatus;
use reqwest::Method;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Route prefix of the conversation API.
const CONVERSATIONS: &str = "/api/conversations";

/// Timeouts and waits of a remote conversation (the reference's defaults).
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Timeout of each HTTP request.
    pub request_timeout: Duration,
    /// How long creation waits for the event socket to subscribe.
    pub ready_timeout: Duration,
    /// How long `run` waits for the run to end.
    pub run_timeout: Duration,
    /// Interval of the status polls `run` makes besides the socket.
    pub poll_interval: Duration,
    /// How long polls must report a finished run without the socket's
    /// post-run snapshot before `run` accepts it (socket lost).
    pub terminal_fallback: Duration,
    /// How long `run` keeps waiting while the server does not answer at
    /// all (connection refused or reset, timeouts) before giving up.
    pub unreachable_timeout: Duration,
    /// Delete the conversation on the server in [`RemoteConversation::close`].
    pub delete_on_close: bool,
    /// Certificates trusted for `https://`/`wss://` servers: the system
    /// roots (`SSL_CERT_FILE` honoured) plus an optional CA bundle.
    pub tls: TlsOptions,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            ready_timeout: Duration::from_secs(30),
            run_timeout: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            terminal_fallback: Duration::from_secs(30),
            unreachable_timeout: Duration::from_secs(120),
            delete_on_close: false,
            tls: TlsOptions::default(),
        }
    }
}

struct Inner {
    id: Uuid,
    api: ApiClient,
    hub: Arc<Hub>,
    socket: EventSocket,
    options: RemoteOptions,
    /// Where the completion logs of the agent's LLMs go, by usage id.
    log_folders: HashMap<String, PathBuf>,
}

/// A conversation on an agent server. Cheap to clone; the event socket
/// stops when the last clone is dropped or [`close`](Self::close)d.
#[derive(Clone)]
pub struct RemoteConversation {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConversation")
            .field("id", &self.inner.id)
            .field("host", &self.inner.api.base())
            .finish_non_exhaustive()
    }
}

/// The client of `host` (`http://` or `https://`; the event socket follows
/// with `ws://` or `wss://` over the same TLS configuration).
fn client(host: &str, key: Option<&str>, o: &RemoteOptions) -> Result<ApiClient, RemoteError> {
    ApiClient::new(host, key, o.request_timeout, o.tls.clone())
}

fn parse_id(info: &Value, what: &str) -> Result<Uuid, RemoteError> {
    info.get("id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| RemoteError::Protocol {
            what: what.into(),
            detail: "answer has no conversation id".into(),
        })
}

impl RemoteConversation {
    /// Creates a conversation on the server at `host` (`POST
    /// /api/conversations`; an existing `conversation_id` is returned as
    /// is) and subscribes to its events.
    pub async fn create(
        host: &str,
        api_key: Option<&str>,
        request: &StartConversationRequest,
        options: RemoteOptions,
    ) -> Result<Self, RemoteError> {
        let api = client(host, api_key, &options)?;
        let (_, info) = api
            .call(Method::POST, CONVERSATIONS, Some(request), &[], None)
            .await?;
        let id = parse_id(&info, "POST /api/conversations")?;
        // The client's own agent says where its completion logs go.
        let agent = serde_json::to_value(request)
            .ok()
            .and_then(|r| r.get("agent").cloned())
            .unwrap_or(Value::Null);
        Self::connect(api, id, info, completion_logs::folders(&agent), options).await
    }

    /// Attaches to an existing conversation; never creates one. The
    /// completion logs of the stored agent's LLMs that log are written
    /// into their folders here.
    pub async fn attach(
        host: &str,
        api_key: Option<&str>,
        id: Uuid,
        options: RemoteOptions,
    ) -> Result<Self, RemoteError> {
        let api = client(host, api_key, &options)?;
        let (_, info) = api
            .call::<Value>(
                Method::GET,
                &format!("{CONVERSATIONS}/{id}"),
                None,
                &[],
                Some(id),
            )
            .await?;
        let agent = info.get("agent").cloned().unwrap_or(Value::Null);
        Self::connect(api, id, info, completion_logs::folders(&agent), options).await
    }

    /// Mirrors the conversation's events; the completion logs streamed from
    /// now on (history is not replayed) are written into `log_folders` (by
    /// usage id).
    async fn connect(
        api: ApiClient,
        id: Uuid,
        info: Value,
        log_folders: HashMap<String, PathBuf>,
        options: RemoteOptions,
    ) -> Result<Self, RemoteError> {
        // The client side's `conversation` root span, as the reference's
        // remote conversation starts one; requests carry its trace context.
        let defaults = openhands_protocol::observability::ProcessDefaults::from_env();
        let root = crate::telemetry::observability::root_span(
            &id,
            &crate::telemetry::observability::Observability::default().over(&defaults),
            &defaults,
        );
        let api = api.with_trace_root(root);
        let hub = Arc::new(Hub::default());
        if let Value::Object(m) = info {
            hub.set_state(m);
        }
        sync_events(&api, id, &hub).await?;
        completion_logs::spawn_writer(hub.subscribe(), log_folders.clone());
        let socket = EventSocket::spawn(api.clone(), id, hub.clone());
        socket.wait_ready(id, options.ready_timeout).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                id,
                api,
                hub,
                socket,
                options,
                log_folders,
            }),
        })
    }

    /// The conversation id.
    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    /// The server URL.
    pub fn host(&self) -> &str {
        self.inner.api.base()
    }

    /// How the event socket is doing.
    pub fn socket_state(&self) -> SocketState {
        self.inner.socket.state()
    }

    fn path(&self, tail: &str) -> String {
        format!("{CONVERSATIONS}/{}{tail}", self.inner.id)
    }

    async fn post<B: serde::Serialize + ?Sized>(
        &self,
        tail: &str,
        body: Option<&B>,
    ) -> Result<Value, RemoteError> {
        let (_, v) = self
            .inner
            .api
            .call(
                Method::POST,
                &self.path(tail),
                body,
                &[],
                Some(self.inner.id),
            )
            .await?;
        Ok(v)
    }

    /// Sends a user text message (does not start a run).
    pub async fn send_message(&self, text: impl Into<String>) -> Result<(), RemoteError> {
        self.post("/events", Some(&SendMessageRequest::user_text(text, false)))
            .await
            .map(drop)
    }

    /// Sends a message of any role and content.
    pub async fn send(&self, message: &Message) -> Result<(), RemoteError> {
        let body = SendMessageRequest {
            role: message.role,
            content: message.content.clone(),
            run: false,
        };
        self.post("/events", Some(&body)).await.map(drop)
    }

    /// Starts a run without waiting (a running conversation is left as is).
    /// Answers whether this call started it.
    pub async fn start_run(&self) -> Result<bool, RemoteError> {
        let (status, _) = self
            .inner
            .api
            .call::<Value>(
                Method::POST,
                &self.path("/run"),
                None,
                &[409],
                Some(self.inner.id),
            )
            .await?;
        Ok(status != 409)
    }

    /// Runs the agent and waits for the run to end: the socket's post-run
    /// snapshot ends the wait; status polls catch `error`/`stuck` and a lost
    /// socket. `error`, `stuck`, a vanished conversation and the run
    /// timeout are errors; otherwise answers the status the run ended in.
    pub async fn run(&self) -> Result<ExecutionStatus, RemoteError> {
        let hub = &self.inner.hub;
        hub.arm(false);
        let since = hub.len();
        let started = self.start_run().await;
        match started {
            Ok(_) => hub.mark_running(),
            Err(e) => {
                hub.disarm();
                return Err(e);
            }
        }
        let result = self.wait_for_run(since).await;
        hub.disarm();
        if result.is_ok() {
            // Anything the socket missed while reconnecting.
            sync_events(&self.inner.api, self.inner.id, hub).await?;
        }
        result
    }

    async fn wait_for_run(&self, since: usize) -> Result<ExecutionStatus, RemoteError> {
        let o = &self.inner.options;
        let hub = &self.inner.hub;
        let deadline = Instant::now() + o.run_timeout;
        let mut terminal_since: Option<Instant> = None;
        let mut unreachable_since: Option<Instant> = None;
        let mut next_poll = Instant::now() + o.poll_interval;
        loop {
            let changed = hub.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(s) = hub.run_done() {
                return self.outcome(s, since);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RemoteError::Run {
                    id: self.inner.id,
                    detail: format!(
                        "timed out after {} s; it may still be running on the server",
                        o.run_timeout.as_secs()
                    ),
                });
            }
            if now >= next_poll {
                next_poll = now + o.poll_interval;
                let polled = self.poll_status().await;
                if polled.is_ok() {
                    unreachable_since = None;
                }
                match polled {
                    Ok(Some(s @ (ExecutionStatus::Error | ExecutionStatus::Stuck))) => {
                        return self.outcome(s, since);
                    }
                    Ok(Some(ExecutionStatus::Running)) | Ok(None) => terminal_since = None,
                    Ok(Some(s)) => {
                        let first = *terminal_since.get_or_insert(now);
                        if now.duration_since(first) >= o.terminal_fallback {
                            tracing::warn!(conversation = %self.inner.id, status = s.as_str(), "no post-run snapshot on the socket; accepting the polled status");
                            return self.outcome(s, since);
                        }
                    }
                    Err(e @ (RemoteError::NotFound(_) | RemoteError::Unauthorized { .. })) => {
                        return Err(e);
                    }
                    Err(RemoteError::Status { status, .. })
                        if (400..500).contains(&status) && status != 429 =>
                    {
                        return Err(RemoteError::Run {
                            id: self.inner.id,
                            detail: format!("status poll failed with HTTP {status}"),
                        });
                    }
                    Err(e) => {
                        terminal_since = None;
                        if matches!(e, RemoteError::Unreachable { .. }) {
                            let first = *unreachable_since.get_or_insert(now);
                            if now.duration_since(first) >= o.unreachable_timeout {
                                return Err(RemoteError::Run {
                                    id: self.inner.id,
                                    detail: format!(
                                        "agent server unreachable for {} s: {e}",
                                        o.unreachable_timeout.as_secs()
                                    ),
                                });
                            }
                        }
                        tracing::warn!(conversation = %self.inner.id, error = %e, "status poll failed; retrying");
                    }
                }
            }
            let wake = next_poll.min(deadline);
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    fn outcome(
        &self,
        status: ExecutionStatus,
        since: usize,
    ) -> Result<ExecutionStatus, RemoteError> {
        match status {
            ExecutionStatus::Error => {
                let detail = self.inner.hub.events()[since.min(self.inner.hub.len())..]
                    .iter()
                    .rev()
                    .find_map(|e| match &e.body {
                        EventBody::ConversationError(c) => {
                            Some(format!("{}: {}", c.code, c.detail))
                        }
                        _ => None,
                    })
                    .unwrap_or_else(|| "the conversation ended with an error".into());
                Err(RemoteError::Run {
                    id: self.inner.id,
                    detail,
                })
            }
            ExecutionStatus::Stuck => Err(RemoteError::Run {
                id: self.inner.id,
                detail: "the conversation got stuck".into(),
            }),
            s => Ok(s),
        }
    }

    async fn poll_status(&self) -> Result<Option<ExecutionStatus>, RemoteError> {
        let info = self.info().await?;
        Ok(info
            .get("execution_status")
            .and_then(|v| serde_json::from_value(v.clone()).ok()))
    }

    /// `GET /api/conversations/{id}`: the conversation's current info
    /// (state fields, title, metrics); also refreshes [`state`](Self::state).
    pub async fn info(&self) -> Result<Map<String, Value>, RemoteError> {
        let (_, v) = self
            .inner
            .api
            .call::<Value>(Method::GET, &self.path(""), None, &[], Some(self.inner.id))
            .await?;
        match v {
            Value::Object(m) => {
                self.inner.hub.set_state(m.clone());
                Ok(m)
            }
            _ => Err(RemoteError::Protocol {
                what: self.path(""),
                detail: "conversation info is not an object".into(),
            }),
        }
    }

    /// The last known state fields, as the socket reported them.
    pub fn state(&self) -> Map<String, Value> {
        self.inner.hub.state()
    }

    /// The last known execution status.
    pub fn status(&self) -> ExecutionStatus {
        self.inner
            .hub
            .state()
            .get("execution_status")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// The events received so far (stored events only, in order).
    pub fn events(&self) -> Vec<Event> {
        self.inner.hub.events()
    }

    /// Re-reads every event over REST and adds those the socket missed.
    pub async fn reconcile(&self) -> Result<(), RemoteError> {
        sync_events(&self.inner.api, self.inner.id, &self.inner.hub).await
    }

    /// Live events from now on (including the transient `full_state`
    /// snapshots); a subscriber that falls more than 1024 events behind
    /// skips the oldest ones.
    pub fn subscribe(&self) -> impl Stream<Item = Event> + Send + 'static {
        let rx = self.inner.hub.subscribe();
        futures::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(e) => return Some((e, rx)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(skipped = n, "remote event subscriber lagged");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// Pauses the run (the current step completes).
    pub async fn pause(&self) -> Result<(), RemoteError> {
        self.post::<Value>("/pause", None).await.map(drop)
    }

    /// Interrupts the run (cancels the model call in flight).
    pub async fn interrupt(&self) -> Result<(), RemoteError> {
        self.post::<Value>("/interrupt", None).await.map(drop)
    }

    /// Answers actions waiting for confirmation: accepted ones run on the
    /// next [`run`](Self::run); rejected ones get a rejection observation.
    pub async fn respond_to_confirmation(
        &self,
        accept: bool,
        reason: Option<String>,
    ) -> Result<(), RemoteError> {
        let body = ConfirmationResponseRequest {
            accept,
            reason: reason.unwrap_or_else(|| "User rejected the action.".into()),
        };
        self.post("/events/respond_to_confirmation", Some(&body))
            .await
            .map(drop)
    }

    /// Sets the confirmation policy (`{"kind": "AlwaysConfirm"}`, …).
    pub async fn set_confirmation_policy(
        &self,
        policy: &openhands_wire::state::ConfirmationPolicy,
    ) -> Result<(), RemoteError> {
        let body = serde_json::json!({ "policy": policy });
        self.post("/confirmation_policy", Some(&body))
            .await
            .map(drop)
    }

    /// Adds or replaces secrets (name → value or secret source JSON).
    pub async fn update_secrets(&self, secrets: Map<String, Value>) -> Result<(), RemoteError> {
        self.post("/secrets", Some(&UpdateSecretsRequest { secrets }))
            .await
            .map(drop)
    }

    /// Asks the agent's LLM a question outside the conversation.
    pub async fn ask_agent(&self, question: &str) -> Result<String, RemoteError> {
        let body = AskAgentRequest {
            question: question.into(),
        };
        let v = self.post("/ask_agent", Some(&body)).await?;
        v.get("response")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| RemoteError::Protocol {
                what: self.path("/ask_agent"),
                detail: "answer has no 'response'".into(),
            })
    }

    /// Runs the agent's tool `tool_name` on `action` on the server, outside
    /// the agent loop (see `LocalConversation::execute_tool`), and returns
    /// its observation. Nothing is recorded in the conversation.
    pub async fn execute_tool(&self, tool_name: &str, action: Value) -> Result<Value, RemoteError> {
        let body = ExecuteToolRequest {
            tool_name: tool_name.to_string(),
            action,
        };
        let what = self.path("/execute_tool");
        let (status, v) = self
            .inner
            .api
            .call(
                Method::POST,
                &what,
                Some(&body),
                &[400, 404, 422],
                Some(self.inner.id),
            )
            .await?;
        if (200..300).contains(&status) {
            let answer: ExecuteToolResponse =
                serde_json::from_value(v).map_err(|e| RemoteError::Protocol {
                    what,
                    detail: format!("answer has no observation: {e}"),
                })?;
            return Ok(answer.observation);
        }
        let detail = match v.get("detail") {
            Some(Value::String(d)) => d.clone(),
            Some(other) => other.to_string(),
            None => v.to_string(),
        };
        // The conversation itself is missing: the server's plain 404.
        if status == 404 && detail == "Not Found" {
            return Err(RemoteError::NotFound(self.inner.id));
        }
        Err(RemoteError::ToolRefused { status, detail })
    }

    /// Forks the conversation on the server and attaches to the fork.
    pub async fn fork(&self, request: &ForkConversationRequest) -> Result<Self, RemoteError> {
        let info = self.post("/fork", Some(request)).await?;
        let id = parse_id(&info, "fork")?;
        Self::connect(
            self.inner.api.clone(),
            id,
            info,
            self.inner.log_folders.clone(),
            self.inner.options.clone(),
        )
        .await
    }

    /// Sets the security analyzer (`{"kind": "LLMSecurityAnalyzer"}`, …) or
    /// removes it (`None`).
    pub async fn set_security_analyzer(&self, analyzer: Option<Value>) -> Result<(), RemoteError> {
        let body = serde_json::json!({ "security_analyzer": analyzer });
        self.post("/security_analyzer", Some(&body)).await.map(drop)
    }

    /// Sets the display title without running the agent.
    pub async fn set_title(&self, title: &str) -> Result<(), RemoteError> {
        let body = serde_json::json!({ "title": title });
        self.inner
            .api
            .call(
                Method::PATCH,
                &self.path(""),
                Some(&body),
                &[],
                Some(self.inner.id),
            )
            .await
            .map(drop)
    }

    /// Asks the server to condense the history now (an error when the
    /// agent has no condenser that handles requests).
    pub async fn condense(&self) -> Result<(), RemoteError> {
        self.post::<Value>("/condense", None).await.map(drop)
    }

    /// Moves the conversation's HEAD on the server to `event_id` (`None`:
    /// the empty tree); the next run works on that branch. Answers the
    /// server's new `leaf_event_id`.
    pub async fn navigate_to(&self, event_id: Option<&str>) -> Result<Option<String>, RemoteError> {
        let body = NavigateConversationRequest {
            event_id: event_id.map(str::to_string),
        };
        let info = self.post("/navigate", Some(&body)).await?;
        Ok(info
            .get("leaf_event_id")
            .and_then(Value::as_str)
            .map(str::to_string))
    }

    /// Deletes the conversation on the server and stops the event socket.
    pub async fn delete(&self) -> Result<(), RemoteError> {
        self.inner.socket.stop();
        self.inner
            .api
            .call::<Value>(
                Method::DELETE,
                &self.path(""),
                None,
                &[],
                Some(self.inner.id),
            )
            .await
            .map(drop)
    }

    /// Stops the event socket; with `delete_on_close` also deletes the
    /// conversation on the server.
    pub async fn close(&self) -> Result<(), RemoteError> {
        self.inner.socket.stop();
        let deleted = if self.inner.options.delete_on_close {
            self.inner
                .api
                .call::<Value>(Method::DELETE, &self.path(""), None, &[404], None)
                .await
                .map(drop)
        } else {
            Ok(())
        };
        self.inner.api.end_trace();
        deleted
    }
}
