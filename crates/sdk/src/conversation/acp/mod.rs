//! Conversations whose agent is an `ACPAgent`: the turn runs in an external
//! ACP server (see `openhands_acp`) instead of our LLM loop. What the
//! reference's `ACPAgent` records, we record: the fixed `SystemPromptEvent`,
//! `agent_state` (`acp_session_id`, models, ...), one `ACPToolCallEvent`
//! when a tool call starts and one when it ends, the turn's answer as a
//! `finish` action + observation, and on failure an agent `MessageEvent`
//! (`ACP error: ...`) plus a `ConversationErrorEvent` with the reference's
//! code. The server process lives as long as the conversation object; one
//! that died is started again (resuming its session) on the next run.

pub(crate) mod credentials;
pub(crate) mod slot;

use super::core::state_update;
use super::error::ConversationError;
use super::local::LocalConversation;
use super::step::mask_strings;
use openhands_acp::{
    ACP_AGENT_KIND, AcpAgentConfig, AcpClient, AcpError, LaunchOptions, PriorSession,
    PromptOutcome, SessionState, ToolCallEntry, TurnAccumulator,
};
use openhands_wire::agent::AgentSpec;
use openhands_wire::content::{Content, TextContent};
use openhands_wire::event::{
    ActionEvent, ConversationErrorEvent, Event, EventBody, MessageEvent, ObservationEvent,
    SourceType, SystemPromptEvent,
};
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use openhands_wire::state::ExecutionStatus;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// The system prompt text the reference records for ACP conversations.
pub const ACP_SYSTEM_PROMPT: &str = "This conversation is powered by an ACP server. The system prompt and tools are managed by the ACP server and are not available for display.";

/// The `ACPAgent` configuration of `spec`; `None` for other agents.
pub fn acp_config(spec: &AgentSpec) -> Option<Result<AcpAgentConfig, openhands_acp::ConfigError>> {
    if spec.kind != ACP_AGENT_KIND {
        return None;
    }
    let raw = serde_json::to_value(spec)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    Some(AcpAgentConfig::from_agent(&raw))
}

/// The ACP session state a conversation shows (`ConversationInfo`'s
/// `current_model_id`, `available_models`, `supports_runtime_model_switch`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AcpModelState {
    /// The model the session runs (or the configured one before start).
    pub current_model_id: Option<String>,
    /// Models it offers.
    pub available_models: Vec<Value>,
    /// Whether the model can be switched live.
    pub supports_runtime_model_switch: bool,
}

impl LocalConversation {
    /// Whether the agent is an `ACPAgent`.
    pub fn is_acp(&self) -> bool {
        self.inner
            .agent
            .with_agent(|a| a.spec().kind == ACP_AGENT_KIND)
    }

    fn acp_agent_config(&self) -> Result<AcpAgentConfig, ConversationError> {
        let spec = self.inner.agent.spec();
        match acp_config(&spec) {
            Some(Ok(c)) => Ok(c),
            Some(Err(e)) => Err(ConversationError::Invalid(e.to_string())),
            None => Err(ConversationError::Invalid(
                "switch_acp_model is only supported for ACP conversations.".into(),
            )),
        }
    }

    /// Records the ACP `SystemPromptEvent` once (blocking: writes it).
    pub(crate) fn ensure_acp_prompt(&self) -> Result<(), ConversationError> {
        let suffix = self.acp_suffix();
        let ev = Event::with_source(
            SourceType::Agent,
            EventBody::SystemPrompt(SystemPromptEvent {
                system_prompt: TextContent::new(ACP_SYSTEM_PROMPT),
                tools: Vec::new(),
                dynamic_context: suffix.map(TextContent::new),
            }),
        );
        self.commit(false, |c| {
            let already = c
                .events()
                .iter()
                .any(|e| matches!(e.body, EventBody::SystemPrompt(_)));
            if already { Vec::new() } else { vec![ev] }
        })?;
        Ok(())
    }

    /// The prompt-only agent context (system suffix, skills, secret names)
    /// sent with the first prompt of a fresh session; `None` without an
    /// agent context and without secrets, as in the reference. The ACP
    /// server knows its own working directory, so it is not repeated.
    fn acp_suffix(&self) -> Option<String> {
        let mut spec = self.inner.agent.spec();
        let mut secret_names = self.secrets().names();
        if let Some(Ok(config)) = acp_config(&spec) {
            let on_disk = openhands_acp::files::present_file_secret_names(&config, &secret_names);
            secret_names.retain(|n| !on_disk.contains(n));
        }
        let has_context = spec.agent_context.as_ref().is_some_and(|c| c.is_object());
        if !has_context && secret_names.is_empty() {
            return None;
        }
        spec.tools.clear();
        crate::agent::prompt::render_dynamic_context(
            &spec,
            &crate::agent::prompt::DynamicInputs {
                working_dir: String::new(),
                secret_names,
                date: if has_context {
                    chrono::Local::now().format("%Y-%m-%d").to_string()
                } else {
                    String::new()
                },
                memory: None,
            },
        )
    }

    /// The live ACP client, starting the server (and its session) when
    /// there is none or the last one died. A start failure is recorded
    /// (`ConversationErrorEvent` with the reference's code, status `error`)
    /// and returned as [`ConversationError::Acp`].
    pub(crate) async fn ensure_acp_started(&self) -> Result<AcpClient, ConversationError> {
        let _starting = self.inner.acp.starting().await;
        let current = self.inner.acp.client();
        if let Some(c) = current {
            if c.is_alive() {
                return Ok(c);
            }
            c.close().await;
            self.inner.acp.set(None);
        }
        let config = self.acp_agent_config()?;
        let mut opts = self.acp_launch_options(&config)?;
        let cwd = opts.cwd.to_string_lossy().into_owned();
        let root = openhands_acp::files::acp_root(
            self.persistence_dir().as_deref(),
            &self.inner.env.working_dir,
        );
        let prepared = {
            let config = config.clone();
            let root = root.clone();
            let secrets = self.secrets();
            let mut env = opts.env.clone();
            tokio::task::spawn_blocking(move || {
                openhands_acp::files::isolate_data_dir(&config, &root, &mut env)?;
                openhands_acp::files::materialize(&config, &root, &|n| secrets.get(n), &mut env)?;
                Ok::<_, openhands_acp::files::FilesError>(env)
            })
            .await
            .map_err(|e| ConversationError::Invalid(format!("ACP credential files: {e}")))?
        };
        let prepared = match prepared {
            Ok(mut env) => self
                .materialize_bound_credentials(&config, &root, &mut env)
                .await
                .map(|()| env)
                .map_err(|e| credentials::acp_error(&e)),
            Err(e) => Err(AcpError::Invalid(e.to_string())),
        };
        let started = match prepared {
            Ok(env) => {
                opts.env = env;
                AcpClient::start(&config, opts).await
            }
            Err(e) => Err(e),
        };
        match started {
            Ok(client) => {
                let state = client.state();
                self.record_acp_state(&state, &cwd, config.model.is_some())
                    .await?;
                if self.is_closed() {
                    client.close().await;
                    return Err(ConversationError::Interrupted);
                }
                self.inner.acp.set(Some(client.clone()));
                Ok(client)
            }
            Err(e) => {
                let ev = Event::with_source(
                    SourceType::Agent,
                    EventBody::ConversationError(ConversationErrorEvent {
                        code: e.init_code().to_string(),
                        detail: self.secrets_masked(&e.detail()),
                        classification: None,
                    }),
                );
                self.commit_async(true, move |c| {
                    let mut out = vec![ev];
                    out.extend(c.set_status(ExecutionStatus::Error));
                    out
                })
                .await?;
                Err(ConversationError::Acp(e))
            }
        }
    }

    fn secrets_masked(&self, text: &str) -> String {
        let mut v = Value::String(text.to_string());
        mask_strings(&mut v, &self.secrets());
        v.as_str().unwrap_or_default().to_string()
    }

    /// Working directory, environment (policy + every conversation secret
    /// as a variable, as the reference injects them, except the file
    /// secrets written to disk before the start), sandbox, the session to
    /// resume and the agent's stdio MCP servers.
    fn acp_launch_options(
        &self,
        config: &AcpAgentConfig,
    ) -> Result<LaunchOptions, ConversationError> {
        let secrets = self.secrets();
        let names = secrets.names();
        // File secrets are written to disk, not passed as variables.
        let on_disk = openhands_acp::files::present_file_secret_names(config, &names);
        let pairs: Vec<(String, String)> = names
            .into_iter()
            .filter(|n| !on_disk.contains(n))
            .filter(|n| openhands_workspace::exec::env::is_valid_name(n))
            .filter_map(|n| secrets.get(&n).map(|v| (n, v)))
            .collect();
        let policy = &self.inner.env.exec;
        let mut env = policy
            .env
            .child_env_with(pairs)
            .map_err(|e| ConversationError::Invalid(format!("ACP server environment: {e}")))?;
        // Nested Claude Code instances refuse to start with it set.
        env.remove("CLAUDECODE");
        let cwd = self.inner.env.working_dir.clone();
        let agent_state = self.inner.log.read(|c| c.state.agent_state.clone());
        let text = |k: &str| {
            agent_state
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let here = cwd.to_string_lossy().into_owned();
        let prior = match &config.resume_session_id {
            Some(id) => Some(id.clone()),
            None => {
                text("acp_session_id").filter(|_| text("acp_session_cwd").is_none_or(|c| c == here))
            }
        };
        let spec = self.inner.agent.spec();
        Ok(LaunchOptions {
            cwd,
            env,
            sandbox: policy.sandbox.clone(),
            prior_session: prior.map(|session_id| PriorSession {
                session_id,
                via_config_option: agent_state
                    .get("acp_model_via_config_option")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }),
            mcp_servers: acp_mcp_servers(&spec.mcp_config),
        })
    }

    /// Writes the session's identity and models into `agent_state`.
    async fn record_acp_state(
        &self,
        state: &SessionState,
        cwd: &str,
        override_requested: bool,
    ) -> Result<(), ConversationError> {
        let mut agent_state = self.inner.log.read(|c| c.state.agent_state.clone());
        agent_state.insert("acp_agent_name".into(), json!(state.agent_name));
        agent_state.insert("acp_agent_version".into(), json!(state.agent_version));
        agent_state.insert("acp_session_id".into(), json!(state.session_id));
        agent_state.insert("acp_session_cwd".into(), json!(cwd));
        agent_state.insert(
            "acp_supports_runtime_model_switch".into(),
            json!(state.supports_runtime_model_switch()),
        );
        agent_state.insert(
            "acp_model_via_config_option".into(),
            json!(state.via_config_option),
        );
        if !state.resumed {
            agent_state.remove("acp_suffix_installed");
        }
        let not_applied = override_requested && !state.model_override_applied;
        match &state.current_model_id {
            Some(m) => {
                agent_state.insert("acp_current_model_id".into(), json!(m));
            }
            None if !state.resumed || state.available_models.is_some() || not_applied => {
                agent_state.remove("acp_current_model_id");
            }
            None => {}
        }
        match &state.available_models {
            Some(models) => {
                agent_state.insert("acp_available_models".into(), json!(models));
            }
            None if !state.resumed => {
                agent_state.remove("acp_available_models");
            }
            None => {}
        }
        self.set_agent_state(agent_state).await
    }

    async fn set_agent_state(
        &self,
        agent_state: Map<String, Value>,
    ) -> Result<(), ConversationError> {
        let value = Value::Object(agent_state.clone());
        self.commit_async(true, move |c| {
            c.state_mut().agent_state = agent_state;
            vec![state_update("agent_state", value)]
        })
        .await?;
        Ok(())
    }

    /// One ACP turn: the last user message is sent as the prompt, the
    /// server's tool calls are recorded as they start and end, the answer
    /// becomes a `finish` action and the status `finished`; failures are
    /// recorded as the reference does and end the run with `error`.
    pub(crate) async fn acp_step(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(), ConversationError> {
        let result = self.acp_turn(cancel).await;
        // A turn that did not complete may have rotated the credential file
        // too: synced (a failure only logged, the turn failed already).
        if self.status() != ExecutionStatus::Finished
            && let Err(e) = self.flush_bound_credentials().await
        {
            tracing::warn!(conversation = %self.inner.id, error = %e, "ACP file credentials not synced after a failed turn");
        }
        result
    }

    async fn acp_turn(&self, cancel: &CancellationToken) -> Result<(), ConversationError> {
        let client = match self.ensure_acp_started().await {
            Ok(c) => c,
            // Recorded already; the status is `error`.
            Err(ConversationError::Acp(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let Some(mut blocks) = self.acp_prompt_blocks() else {
            self.set_status(ExecutionStatus::Finished).await?;
            return Ok(());
        };
        let agent_state = self.inner.log.read(|c| c.state.agent_state.clone());
        let suffix_pending = !agent_state
            .get("acp_suffix_installed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let suffix = self.acp_suffix().filter(|_| suffix_pending);
        if let Some(s) = &suffix {
            blocks.push(json!({"type": "text", "text": s}));
        }

        // Tool-call reports are written in order by one task while the
        // prompt runs, so clients see them live.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ToolCallEntry>();
        let writer = {
            let this = self.clone();
            tokio::spawn(async move {
                while let Some(entry) = rx.recv().await {
                    // Masked again with what the ACP server has rotated its
                    // bound credentials to since the update was masked.
                    this.track_bound_credentials().await;
                    let mut event = tool_call_event(&entry);
                    if let EventBody::Unknown { fields, .. } = &mut event.body {
                        let mut v = Value::Object(std::mem::take(fields));
                        mask_strings(&mut v, &this.secrets());
                        if let Value::Object(m) = v {
                            *fields = m;
                        }
                    }
                    if let Err(e) = this.emit_async(event).await {
                        tracing::warn!(error = %e, "ACP tool call event not recorded");
                    }
                }
            })
        };
        let secrets = self.secrets();
        // The answer's text chunks (masked) go to the token listeners as
        // they arrive, as the reference relays them to `on_token`.
        let tokens = self.token_sink();
        let mut acc = TurnAccumulator::default();
        let started = std::time::Instant::now();
        // Transient failures are retried as the reference does
        // (`openhands_acp::retry`); the failed attempt's open tool calls
        // are closed as failed first, since a retried turn gets new ids.
        let policy = openhands_acp::RetryPolicy::from_env();
        let mut attempt = 0u32;
        let outcome = loop {
            let result = {
                let mask = |v: &mut Value| mask_strings(v, &secrets);
                let mut on_update = |params: &Value| {
                    let chunks = acc.text.len();
                    if let Some(entry) = acc.apply(params, &mask) {
                        let _ = tx.send(entry);
                    }
                    if let Some(sink) = &tokens {
                        for chunk in acc.text.iter().skip(chunks) {
                            sink(openhands_llm::StreamDelta {
                                content: Some(chunk.clone()),
                                reasoning_content: None,
                            });
                        }
                    }
                };
                client.prompt(blocks.clone(), cancel, &mut on_update).await
            };
            let delay = match &result {
                Err(e) => policy.next_delay(attempt, e, client.is_alive()),
                Ok(_) => None,
            };
            let Some(delay) = delay else {
                break result;
            };
            if let Err(e) = &result {
                tracing::warn!(
                    attempt = attempt + 1,
                    attempts = policy.max_retries + 1,
                    delay_s = delay.as_secs_f64(),
                    error = %e.detail(),
                    "ACP prompt failed with a retriable error; retrying"
                );
            }
            for entry in acc.close_open_calls("failed") {
                let _ = tx.send(entry);
            }
            acc = TurnAccumulator::default();
            attempt += 1;
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cancel.cancelled() => break Ok(PromptOutcome::Cancelled),
            }
        };
        let closing = match &outcome {
            Ok(PromptOutcome::Completed { .. }) => "completed",
            _ => "failed",
        };
        for entry in acc.close_open_calls(closing) {
            let _ = tx.send(entry);
        }
        drop(tx);
        let _ = writer.await;

        match outcome {
            Ok(PromptOutcome::Completed { usage, meta, .. }) => {
                let metrics = self.acp_turn_metrics(
                    &client,
                    &client.state().session_id,
                    &acc,
                    usage.as_ref(),
                    meta.as_ref(),
                    started.elapsed().as_secs_f64(),
                );
                if suffix.is_some() {
                    let mut st = self.inner.log.read(|c| c.state.agent_state.clone());
                    st.insert("acp_suffix_installed".into(), json!(true));
                    self.set_agent_state(st).await?;
                }
                self.track_bound_credentials().await;
                let mut text = Value::String(acc.response_text());
                mask_strings(&mut text, &secrets);
                let mut text = text.as_str().unwrap_or_default().to_string();
                if text.is_empty() {
                    text = "(No response from ACP server)".into();
                }
                let mut thought = Value::String(acc.thought_text());
                mask_strings(&mut thought, &secrets);
                let thought = thought.as_str().unwrap_or_default().to_string();
                let (action, observation) = finish_events(&text, &thought);
                // A credential file the server rotated is synced before the
                // turn counts as finished; a failed sync ends it in error.
                let sync_error = self
                    .flush_bound_credentials()
                    .await
                    .err()
                    .map(|e| credentials::sync_error_event(&e));
                self.commit_async(true, move |c| {
                    let (key, metrics) = metrics;
                    let mut stats = c.stats_base().clone();
                    stats.usage_to_metrics.insert(key, metrics);
                    c.set_stats_base(stats);
                    let mut out = vec![action, observation];
                    match sync_error {
                        Some(ev) => {
                            out.push(ev);
                            out.extend(c.set_status(ExecutionStatus::Error));
                        }
                        None => out.extend(c.set_status(ExecutionStatus::Finished)),
                    }
                    out
                })
                .await?;
                Ok(())
            }
            Ok(PromptOutcome::Cancelled) => Err(ConversationError::Interrupted),
            Err(AcpError::IdleTimeout(secs)) => {
                let msg = agent_message(format!(
                    "ACP prompt timed out after {secs:.0}s with no activity from the agent. The agent may have stalled, or it may have completed its work but the response was not received."
                ));
                self.commit_async(true, move |c| {
                    let mut out = vec![msg];
                    out.extend(c.set_status(ExecutionStatus::Error));
                    out
                })
                .await?;
                Ok(())
            }
            Err(e) => {
                if !client.is_alive() {
                    client.close().await;
                    self.inner.acp.set(None);
                }
                self.track_bound_credentials().await;
                let detail = self.secrets_masked(&e.detail());
                let msg = agent_message(format!("ACP error: {detail}"));
                let err = Event::with_source(
                    SourceType::Agent,
                    EventBody::ConversationError(ConversationErrorEvent {
                        code: e.turn_code().to_string(),
                        detail,
                        classification: None,
                    }),
                );
                self.commit_async(true, move |c| {
                    let mut out = vec![msg, err];
                    out.extend(c.set_status(ExecutionStatus::Error));
                    out
                })
                .await?;
                Ok(())
            }
        }
    }

    /// `ask_agent` of an ACP conversation, as the reference answers it: the
    /// question goes to a fork of the ACP session (`session/fork`), so the
    /// server sees the conversation so far but the main session never sees
    /// the question; the fork's answer comes back masked, its cost is
    /// counted like a turn's, and no event is recorded.
    pub(crate) async fn acp_ask(&self, question: &str) -> Result<String, ConversationError> {
        let answer = self.acp_fork_ask(question).await;
        // The fork may have rotated the credential file too.
        let synced = self.flush_bound_credentials().await;
        match (answer, synced) {
            (Ok(_), Err(e)) => Err(ConversationError::Acp(credentials::acp_error(&e))),
            (answer, _) => answer,
        }
    }

    async fn acp_fork_ask(&self, question: &str) -> Result<String, ConversationError> {
        let client = self.ensure_acp_started().await?;
        let fork = client
            .fork_session()
            .await
            .map_err(ConversationError::Acp)?;
        let secrets = self.secrets();
        let mut acc = TurnAccumulator::default();
        let started = std::time::Instant::now();
        let outcome = {
            let mask = |v: &mut Value| mask_strings(v, &secrets);
            let mut on_update = |params: &Value| {
                // Tool calls of the fork are not the conversation's.
                let _ = acc.apply(params, &mask);
            };
            let blocks = vec![json!({"type": "text", "text": question})];
            client
                .prompt_session(&fork, blocks, &CancellationToken::new(), &mut on_update)
                .await
                .map_err(ConversationError::Acp)?
        };
        let PromptOutcome::Completed { usage, meta, .. } = outcome else {
            return Err(ConversationError::Interrupted);
        };
        let (key, metrics) = self.acp_turn_metrics(
            &client,
            &fork,
            &acc,
            usage.as_ref(),
            meta.as_ref(),
            started.elapsed().as_secs_f64(),
        );
        self.commit_async(true, move |c| {
            let mut stats = c.stats_base().clone();
            stats.usage_to_metrics.insert(key, metrics);
            c.set_stats_base(stats);
            Vec::new()
        })
        .await?;
        // Masked again whole: a secret split across chunks is caught too.
        self.track_bound_credentials().await;
        Ok(self.secrets_masked(&acc.response_text()))
    }

    /// The agent LLM's metrics (by its usage id, `acp-managed`) with this
    /// turn recorded as the reference records it: the cost the session's
    /// cumulative `usage_update` cost grew by, else (no reported cost) the
    /// price of the reported tokens for `acp_model`; the tokens with the
    /// last context window, under the session id as response id; the
    /// turn's latency.
    fn acp_turn_metrics(
        &self,
        client: &AcpClient,
        session_id: &str,
        acc: &TurnAccumulator,
        usage: Option<&Value>,
        meta: Option<&Value>,
        elapsed: f64,
    ) -> (String, openhands_wire::metrics::Metrics) {
        use openhands_acp::usage::{TurnTokens, UsageUpdate};
        use openhands_wire::metrics::{Cost, Metrics, ResponseLatency, TokenUsage};
        let spec = self.inner.agent.spec();
        let key = if spec.llm.usage_id.is_empty() {
            openhands_acp::ACP_SENTINEL_MODEL.to_string()
        } else {
            spec.llm.usage_id.clone()
        };
        let acp_model = spec
            .extra
            .get("acp_model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_owned);
        let model = acp_model
            .clone()
            .unwrap_or_else(|| openhands_acp::ACP_SENTINEL_MODEL.to_string());
        let mut metrics = self
            .inner
            .log
            .read(|c| c.stats_base.usage_to_metrics.get(&key).cloned())
            .unwrap_or_else(|| Metrics::new(model.clone()));
        metrics.model_name = model.clone();
        let session_id = session_id.to_string();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        let add_cost = |metrics: &mut Metrics, cost: f64| {
            metrics.accumulated_cost += cost;
            metrics.costs.push(Cost {
                model: model.clone(),
                cost,
                timestamp: now,
            });
        };
        let mut cost_recorded = false;
        if let Some(update) = acc.usage.as_ref().and_then(UsageUpdate::parse) {
            let delta = client.note_usage(&session_id, &update);
            if delta > 0.0 {
                add_cost(&mut metrics, delta);
                cost_recorded = true;
            }
        }
        let tokens = TurnTokens::from_response(usage, meta);
        if tokens.any() {
            let turn = TokenUsage {
                model: model.clone(),
                prompt_tokens: tokens.input,
                completion_tokens: tokens.output,
                cache_read_tokens: tokens.cache_read,
                cache_write_tokens: tokens.cache_write,
                reasoning_tokens: tokens.reasoning,
                context_window: client.context_window(),
                per_turn_token: tokens.input + tokens.output,
                response_id: session_id.clone(),
            };
            metrics
                .accumulated_token_usage
                .get_or_insert_with(|| TokenUsage {
                    model: model.clone(),
                    response_id: session_id.clone(),
                    ..TokenUsage::default()
                })
                .accumulate(&turn);
            metrics.token_usages.push(turn);
            if !cost_recorded && let Some(m) = &acp_model {
                let price = openhands_llm::model_info::cost(
                    &openhands_wire::llm_config::LlmConfig::new(m.clone()),
                    &TokenUsage {
                        prompt_tokens: tokens.input,
                        completion_tokens: tokens.output,
                        ..TokenUsage::default()
                    },
                );
                if price > 0.0 {
                    add_cost(&mut metrics, price);
                }
            }
        }
        metrics.response_latencies.push(ResponseLatency {
            model,
            latency: elapsed.max(0.0),
            response_id: session_id,
        });
        (key, metrics)
    }

    /// The ACP content blocks of the last user message (text with its
    /// extensions, images); `None` when there is none with content.
    fn acp_prompt_blocks(&self) -> Option<Vec<Value>> {
        let events = self.branch_events();
        events.iter().rev().find_map(|e| {
            let EventBody::Message(m) = &e.body else {
                return None;
            };
            if e.source != SourceType::User {
                return None;
            }
            let mut blocks = Vec::new();
            let extended = m.extended_content.iter().map(|t| Content::Text(t.clone()));
            for c in m.llm_message.content.iter().cloned().chain(extended) {
                match c {
                    Content::Text(t) if !t.text.trim().is_empty() => {
                        blocks.push(json!({"type": "text", "text": t.text}));
                    }
                    Content::Image(img) => {
                        blocks.extend(img.image_urls.iter().filter_map(|u| image_block(u)))
                    }
                    Content::Text(_) => {}
                }
            }
            (!blocks.is_empty()).then_some(blocks)
        })
    }

    /// Switches the ACP model: live through the session when one runs,
    /// otherwise only stored (applied when the session starts). Either way
    /// `acp_model` is persisted. Not an ACP conversation, an empty model or
    /// a server refusal is [`ConversationError::Invalid`]; a server that
    /// does not answer in time is [`ConversationError::Acp`].
    pub async fn switch_acp_model(&self, model: &str) -> Result<(), ConversationError> {
        if !self.is_acp() {
            return Err(ConversationError::Invalid(
                "switch_acp_model is only supported for ACP conversations.".into(),
            ));
        }
        if model.trim().is_empty() {
            return Err(ConversationError::Invalid(
                "model must be a non-empty string".into(),
            ));
        }
        let live = {
            let current = self.inner.acp.client();
            current.filter(AcpClient::is_alive)
        };
        if let Some(client) = &live {
            client.set_model(model).await.map_err(|e| match e {
                AcpError::Invalid(m) => ConversationError::Invalid(m),
                other => ConversationError::Acp(other),
            })?;
        }
        let agent = self.inner.agent.agent().with_acp_model(model);
        let this = self.clone();
        super::writer::run(move || this.replace_agent(agent)).await?;
        // The recorded hint follows every successful switch (cold reads
        // fall back to it).
        let mut st = self.inner.log.read(|c| c.state.agent_state.clone());
        st.insert("acp_current_model_id".into(), json!(model));
        self.set_agent_state(st).await?;
        Ok(())
    }

    /// What `ConversationInfo` shows about the ACP session: the live
    /// session's model, else the recorded one, else (before a session) the
    /// configured `acp_model`.
    pub fn acp_model_state(&self) -> Option<AcpModelState> {
        if !self.is_acp() {
            return None;
        }
        let agent_state = self.inner.log.read(|c| c.state.agent_state.clone());
        let live = self.inner.acp.client().as_ref().map(AcpClient::state);
        let configured = self.inner.agent.with_agent(|a| {
            a.spec()
                .extra
                .get("acp_model")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let current = live
            .as_ref()
            .and_then(|s| s.current_model_id.clone())
            .or_else(|| {
                agent_state
                    .get("acp_current_model_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .or(if live.is_some() { None } else { configured });
        let live_models = live
            .as_ref()
            .and_then(|s| s.available_models.clone())
            .filter(|m| !m.is_empty())
            .map(|m| m.iter().map(|i| json!(i)).collect::<Vec<_>>());
        let available = live_models
            .or_else(|| {
                agent_state
                    .get("acp_available_models")
                    .and_then(Value::as_array)
                    .cloned()
            })
            .unwrap_or_default();
        Some(AcpModelState {
            current_model_id: current,
            available_models: available,
            supports_runtime_model_switch: agent_state
                .get("acp_supports_runtime_model_switch")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// Stops the ACP server, if one runs.
    pub(crate) async fn close_acp(&self) {
        let client = self.inner.acp.take();
        if let Some(c) = client {
            c.close().await;
        }
        if let Err(e) = self.release_bound_credentials().await {
            tracing::warn!(conversation = %self.inner.id, error = %e, "ACP file credentials not synced at close");
        }
    }
}

/// The agent's stdio MCP servers as ACP `McpServer` objects (remote ones
/// are refused when the conversation starts).
fn acp_mcp_servers(mcp_config: &Map<String, Value>) -> Vec<Value> {
    let servers = mcp_config
        .get("mcpServers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    servers
        .iter()
        .filter_map(|(name, s)| {
            let command = s.get("command").and_then(Value::as_str)?;
            let args = s.get("args").cloned().unwrap_or_else(|| json!([]));
            let env: Vec<Value> = s
                .get("env")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| json!({"name": k, "value": v.as_str().unwrap_or_default()}))
                .collect();
            Some(json!({"name": name, "command": command, "args": args, "env": env}))
        })
        .collect()
}

/// An image URL as an ACP image block (data URLs inline, others by URI).
fn image_block(url: &str) -> Option<Value> {
    match url.strip_prefix("data:") {
        Some(rest) => {
            let (header, data) = rest.split_once(',')?;
            let mime = header.split(';').next().unwrap_or_default();
            Some(json!({"type": "image", "data": data, "mimeType": mime}))
        }
        None => Some(json!({"type": "image", "data": "", "mimeType": "image/png", "uri": url})),
    }
}

fn agent_message(text: String) -> Event {
    Event::with_source(
        SourceType::Agent,
        EventBody::Message(MessageEvent {
            llm_message: Message::new(Role::Assistant, vec![Content::Text(TextContent::new(text))]),
            llm_response_id: None,
            activated_skills: Vec::new(),
            extended_content: Vec::new(),
            sender: None,
            critic_result: None,
        }),
    )
}

/// An `ACPToolCallEvent` for a tool call's current state.
fn tool_call_event(entry: &ToolCallEntry) -> Event {
    Event::with_source(
        SourceType::Agent,
        EventBody::Unknown {
            kind: "ACPToolCallEvent".into(),
            fields: entry.event_fields(),
        },
    )
}

/// JSON as Python's `json.dumps` writes it by default (`", "`/`": "`
/// separators, non-ASCII as `\uXXXX` escapes), as the reference's tool
/// call arguments are.
fn python_dumps(v: &Value) -> String {
    let mut out = String::new();
    for c in crate::critic::api::python_json(v).chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The `finish` action and observation closing an ACP turn.
fn finish_events(text: &str, thought: &str) -> (Event, Event) {
    let call_id = uuid::Uuid::new_v4().to_string();
    let action = Event::with_source(
        SourceType::Agent,
        EventBody::Action(ActionEvent {
            thought: Vec::new(),
            reasoning_content: Some(thought.to_string()).filter(|t| !t.is_empty()),
            thinking_blocks: Vec::new(),
            responses_reasoning_item: None,
            action: Some(json!({"message": text, "kind": "FinishAction"})),
            tool_name: "finish".into(),
            tool_call_id: call_id.clone(),
            tool_call: MessageToolCall {
                id: call_id.clone(),
                responses_item_id: None,
                name: "finish".into(),
                arguments: python_dumps(&json!({"message": text})),
                origin: ToolCallOrigin::default(),
            },
            llm_response_id: uuid::Uuid::new_v4().to_string(),
            security_risk: Default::default(),
            critic_result: None,
            summary: None,
        }),
    );
    let observation = Event::with_source(
        SourceType::Environment,
        EventBody::Observation(ObservationEvent {
            tool_name: "finish".into(),
            tool_call_id: call_id,
            observation: json!({
                "content": [{"cache_prompt": false, "type": "text", "text": text}],
                "is_error": false,
                "kind": "FinishObservation"
            }),
            action_id: action.id.clone(),
            extended_content: Vec::new(),
        }),
    );
    (action, observation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_and_mcp_servers_become_acp_objects() {
        assert_eq!(
            image_block("data:image/jpeg;base64,AAAA"),
            Some(json!({"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}))
        );
        assert_eq!(
            image_block("http://x/y.png").unwrap()["uri"],
            "http://x/y.png"
        );
        let cfg = json!({"mcpServers": {"fs": {"command": "npx", "args": ["a"], "env": {"K": "v"}},
            "remote": {"url": "http://x"}}});
        let out = acp_mcp_servers(cfg.as_object().unwrap());
        assert_eq!(
            out,
            [
                json!({"name": "fs", "command": "npx", "args": ["a"], "env": [{"name": "K", "value": "v"}]})
            ]
        );
    }

    #[test]
    fn a_turn_ends_with_the_reference_finish_pair() {
        let (a, o) = finish_events("done", "");
        let a = serde_json::to_value(&a).unwrap();
        let o = serde_json::to_value(&o).unwrap();
        assert_eq!(a["kind"], "ActionEvent");
        assert_eq!(
            a["action"],
            json!({"message": "done", "kind": "FinishAction"})
        );
        assert_eq!(a["tool_call"]["arguments"], r#"{"message": "done"}"#);
        assert_eq!(
            python_dumps(&json!({"message": "é😀"})),
            r#"{"message": "\u00e9\ud83d\ude00"}"#
        );
        assert!(a.get("reasoning_content").is_none());
        assert_eq!(o["observation"]["kind"], "FinishObservation");
        assert_eq!(o["action_id"], a["id"]);
        assert_eq!(o["source"], "environment");
    }
}
