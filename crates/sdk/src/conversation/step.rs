//! One step of the agent: execute confirmed pending actions, or ask the LLM
//! and turn its reply into events (actions and their observations, or a
//! message).

use super::error::ConversationError;
use super::local::LocalConversation;
use super::pending::unmatched_actions;
use super::view::with_view;
use crate::agent::AgentRuntime;
use crate::tool::{SecretAccess, ToolCallContext};
use futures::StreamExt;
use openhands_llm::{LlmError, LlmRequest, LlmResponse};
use openhands_wire::content::{Content, TextContent};
use openhands_wire::convert::{ObservationRenderer, events_to_messages};
use openhands_wire::event::{
    ActionEvent, AgentErrorEvent, ErrorClassification, Event, EventBody, MessageEvent,
    ObservationEvent, SecurityRisk, SourceType,
};
use openhands_wire::message::{Message, MessageToolCall, Role};
use openhands_wire::state::ExecutionStatus;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// Nudge sent when the model answered with neither a tool call nor text.
const EMPTY_REPLY_NUDGE: &str = "Your last response had neither a tool call nor a message. Use a tool to continue the task, or call `finish` when it is done.";

/// Masks secret values in every string of `v`.
pub(crate) fn mask_strings(v: &mut Value, secrets: &crate::secrets::SecretsRegistry) {
    match v {
        Value::String(s) => {
            let masked = secrets.mask(s);
            if masked != *s {
                *s = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask_strings(i, secrets)),
        Value::Object(m) => m.values_mut().for_each(|i| mask_strings(i, secrets)),
        _ => {}
    }
}

/// Fetches the lookup secrets `text` names that have no value yet (see
/// [`crate::secrets::SecretsRegistry::resolve_lookups_named_in`]); the
/// failures as one message, `None` when every one was fetched.
pub(crate) async fn fetch_named_secrets(
    registry: &crate::secrets::SecretsRegistry,
    text: &str,
) -> Option<String> {
    let failures = registry
        .resolve_lookups_named_in(text, crate::secrets::LOOKUP_TIMEOUT)
        .await;
    let text: Vec<String> = failures
        .iter()
        .map(|(name, e)| format!("secret '{name}' could not be fetched: {e}"))
        .collect();
    (!text.is_empty()).then(|| text.join("; "))
}

/// Renders observations with their tool's own renderer and cuts long text.
struct RuntimeRenderer<'a> {
    runtime: &'a AgentRuntime,
    max_chars: usize,
}

impl ObservationRenderer for RuntimeRenderer<'_> {
    fn render(&self, obs: &ObservationEvent) -> Vec<Content> {
        let mut content = match self.runtime.tool(&obs.tool_name) {
            Some(t) => t.observation_to_llm(&obs.observation),
            None => crate::tool::default_observation_content(&obs.observation),
        };
        for c in &mut content {
            if let Content::Text(t) = c {
                t.text = cut_middle(&t.text, self.max_chars);
            }
        }
        content
    }
}

/// Keeps the head and tail of text longer than `max` characters.
fn cut_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if max == 0 || n <= max {
        return text.to_string();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!(
        "{head}\n<response clipped: {} characters omitted>\n{tail}",
        n - 2 * half
    )
}

/// Renders observations generically when no tool instances exist yet.
struct GenericRenderer;

impl ObservationRenderer for GenericRenderer {
    fn render(&self, obs: &ObservationEvent) -> Vec<Content> {
        crate::tool::default_observation_content(&obs.observation)
    }
}

impl LocalConversation {
    /// The whole active branch as LLM messages (no condensed view, no
    /// clipping): what a reviewer such as the goal judge reads. Observations are
    /// rendered by their tools once the agent has started.
    pub fn transcript(&self) -> Vec<Message> {
        let runtime = self.inner.agent.built();
        self.with_branch(|events| match &runtime {
            Some(runtime) => {
                let renderer = RuntimeRenderer {
                    runtime,
                    max_chars: 0,
                };
                events_to_messages(events, &renderer)
            }
            None => events_to_messages(events, &GenericRenderer),
        })
    }

    /// The messages the LLM sees now.
    pub(crate) fn llm_messages(&self, runtime: &AgentRuntime) -> Vec<Message> {
        let max_chars = self
            .inner
            .agent
            .with_agent(|a| a.spec().llm.max_message_chars);
        let renderer = RuntimeRenderer { runtime, max_chars };
        self.with_branch(|events| {
            with_view(events, |view, _| {
                events_to_messages(view.iter().copied(), &renderer)
            })
        })
    }

    /// One iteration of the agent loop.
    pub(crate) async fn step(&self, cancel: &CancellationToken) -> Result<(), ConversationError> {
        if self.is_acp() {
            return self.acp_step(cancel).await;
        }
        let runtime = self.runtime()?;
        let pending = self.with_branch(unmatched_actions);
        if !pending.is_empty() {
            return self.execute_actions(&runtime, pending, cancel).await;
        }
        if self.finish_if_message_blocked().await? {
            return Ok(());
        }
        if let Some(condenser) = runtime.condenser()
            && self.maybe_condense(condenser).await?
        {
            return Ok(());
        }
        let messages = self.llm_messages(&runtime);
        let llm = self.inner.agent.llm();
        let Some(messages) = self.images_for_model(&runtime, &llm, messages).await? else {
            return Ok(());
        };
        let request = LlmRequest {
            messages,
            tools: runtime.schemas().to_vec(),
            conversation_id: Some(self.id().to_string()),
        };
        let sink = self.token_sink();
        let response = tokio::select! {
            r = llm.completion(&request, sink) => r,
            _ = cancel.cancelled() => return Err(ConversationError::Interrupted),
        };
        let response = match response {
            Ok(r) => r,
            Err(LlmError::ContextWindowExceeded(msg)) => {
                if runtime.condenser().is_some_and(|c| c.handles_requests()) {
                    // The next step condenses the history, then retries.
                    self.emit_async(Event::with_source(
                        SourceType::Environment,
                        EventBody::CondensationRequest,
                    ))
                    .await?;
                    return Ok(());
                }
                return Err(ConversationError::Llm(LlmError::ContextWindowExceeded(msg)));
            }
            Err(e) => return Err(e.into()),
        };
        if cancel.is_cancelled() {
            return Err(ConversationError::Interrupted);
        }
        self.handle_response(&runtime, response, cancel).await
    }

    /// What the model gets of the latest user message's images when it
    /// cannot see them: text references for the vision inspector when the
    /// agent has it; otherwise the agent says so and the run finishes
    /// (`None`).
    async fn images_for_model(
        &self,
        runtime: &AgentRuntime,
        llm: &openhands_llm::Llm,
        messages: Vec<Message>,
    ) -> Result<Option<Vec<Message>>, ConversationError> {
        use crate::vision_inspect as vision;
        if llm.vision_is_active() || !vision::latest_user_message_has_image(&messages) {
            return Ok(Some(messages));
        }
        if runtime.tool(vision::VISION_INSPECT_NAME).is_some() {
            return Ok(Some(vision::replace_latest_user_images(messages)));
        }
        let reply = Event::with_source(
            SourceType::Agent,
            EventBody::Message(openhands_wire::event::MessageEvent {
                llm_message: vision::no_vision_reply(llm.model()),
                llm_response_id: None,
                activated_skills: Vec::new(),
                extended_content: Vec::new(),
                sender: None,
                critic_result: None,
            }),
        );
        self.commit_async(true, move |c| {
            let mut out = vec![reply];
            out.extend(c.set_status(openhands_wire::state::ExecutionStatus::Finished));
            out
        })
        .await?;
        Ok(None)
    }

    async fn handle_response(
        &self,
        runtime: &AgentRuntime,
        response: LlmResponse,
        cancel: &CancellationToken,
    ) -> Result<(), ConversationError> {
        let message = response.message;
        let calls = message.tool_calls.clone().unwrap_or_default();
        let critic = self.critic();
        if calls.is_empty() {
            let has_text = !message.text().trim().is_empty();
            let mut ev = Event::with_source(
                SourceType::Agent,
                EventBody::Message(MessageEvent {
                    llm_message: Message {
                        role: Role::Assistant,
                        ..message
                    },
                    llm_response_id: Some(response.id.clone()),
                    activated_skills: Vec::new(),
                    extended_content: Vec::new(),
                    sender: None,
                    critic_result: None,
                }),
            );
            if has_text {
                if let Some(critic) = critic.as_ref().filter(|c| c.evaluates_message()) {
                    let result = tokio::select! {
                        r = self.critique(critic, runtime, &ev) => r,
                        _ = cancel.cancelled() => return Err(ConversationError::Interrupted),
                    };
                    if let EventBody::Message(m) = &mut ev.body {
                        m.critic_result = result;
                    }
                }
                self.commit_async(true, move |c| {
                    let mut out = vec![ev];
                    out.extend(c.set_status(ExecutionStatus::Finished));
                    out
                })
                .await?;
            } else {
                let nudge = Event::with_source(
                    SourceType::Environment,
                    EventBody::Message(MessageEvent {
                        llm_message: Message::user(EMPTY_REPLY_NUDGE),
                        llm_response_id: None,
                        activated_skills: Vec::new(),
                        extended_content: Vec::new(),
                        sender: None,
                        critic_result: None,
                    }),
                );
                self.commit_async(false, move |_| vec![ev, nudge]).await?;
            }
            return Ok(());
        }

        // Calls after the first `finish` are dropped.
        let mut calls = calls;
        if let Some(i) = calls.iter().position(|c| c.name == "finish") {
            if i + 1 < calls.len() {
                tracing::warn!(
                    dropped = calls.len() - i - 1,
                    "tool calls after finish discarded"
                );
            }
            calls.truncate(i + 1);
        }

        let thought: Vec<TextContent> = message
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) if !t.text.is_empty() => Some(t.clone()),
                _ => None,
            })
            .collect();
        let mut to_emit: Vec<Event> = Vec::new();
        let mut valid: Vec<usize> = Vec::new();
        // The model's own risk label counts only when an analyzer is set
        // (as the reference: otherwise every action is UNKNOWN).
        let analyzer_config = self.inner.log.read(|c| c.state.security_analyzer.clone());
        for (i, call) in calls.iter().enumerate() {
            let first = i == 0;
            let parsed = parse_call(runtime, call, analyzer_config.is_some());
            let (action, risk, summary, error) = match parsed {
                Ok(p) => (Some(p.action), p.risk, Some(p.summary), None),
                Err(err) => (None, SecurityRisk::Unknown, None, Some(err.to_string())),
            };
            let mut action_event = Event::with_source(
                SourceType::Agent,
                EventBody::Action(ActionEvent {
                    thought: if first { thought.clone() } else { Vec::new() },
                    reasoning_content: if first {
                        message.reasoning_content.clone()
                    } else {
                        None
                    },
                    thinking_blocks: if first {
                        message.thinking_blocks.clone()
                    } else {
                        Vec::new()
                    },
                    responses_reasoning_item: if first {
                        message.responses_reasoning_item.clone()
                    } else {
                        None
                    },
                    action,
                    tool_name: call.name.clone(),
                    tool_call_id: call.id.clone(),
                    tool_call: call.clone(),
                    llm_response_id: response.id.clone(),
                    security_risk: risk,
                    critic_result: None,
                    summary,
                }),
            );
            if error.is_none()
                && let Some(critic) = critic.as_ref().filter(|c| c.evaluates_action(&call.name))
            {
                let result = tokio::select! {
                    r = self.critique(critic, runtime, &action_event) => r,
                    _ = cancel.cancelled() => return Err(ConversationError::Interrupted),
                };
                if let EventBody::Action(a) = &mut action_event.body {
                    a.critic_result = result;
                }
            }
            let action_id = action_event.id.clone();
            to_emit.push(action_event);
            match error {
                Some(text) => {
                    let mut err = Event::with_source(
                        SourceType::Agent,
                        EventBody::AgentError(AgentErrorEvent {
                            tool_name: call.name.clone(),
                            tool_call_id: call.id.clone(),
                            error: text,
                            classification: Some(ErrorClassification::new(
                                "agent_action",
                                true,
                                "retry",
                            )),
                        }),
                    );
                    err.parent_id = Some(action_id);
                    to_emit.push(err);
                }
                None => valid.push(to_emit.len() - 1),
            }
        }
        let emitted = self.commit_async(false, move |_| to_emit).await?;
        let actions: Vec<(String, ActionEvent)> = valid
            .into_iter()
            .filter_map(|i| match &emitted.get(i)?.body {
                EventBody::Action(a) => Some((emitted[i].id.clone(), a.clone())),
                _ => None,
            })
            .collect();
        if actions.is_empty() {
            return Ok(());
        }
        self.pre_tool_hooks(&actions).await?;
        let policy = self.inner.log.read(|c| c.state.confirmation_policy.clone());
        let risks = self
            .analyze_actions(analyzer_config.as_ref(), &policy, &actions)
            .await?;
        if risks.iter().any(|r| policy.should_confirm(*r)) {
            self.set_status(ExecutionStatus::WaitingForConfirmation)
                .await?;
            return Ok(());
        }
        self.execute_actions(runtime, actions, cancel).await
    }

    /// Runs actions (up to `tool_concurrency_limit` at once) and records
    /// their observations in call order.
    async fn execute_actions(
        &self,
        runtime: &AgentRuntime,
        actions: Vec<(String, ActionEvent)>,
        cancel: &CancellationToken,
    ) -> Result<(), ConversationError> {
        // Lookup secrets the actions name are fetched now (once per
        // conversation); an action whose secret cannot be fetched does not
        // run and the model is told which secret failed.
        let registry = self.secrets();
        let mut lookup_errors: std::collections::HashMap<String, String> =
            std::collections::HashMap::new();
        for (id, a) in &actions {
            if let Some(failed) = fetch_named_secrets(&registry, &a.tool_call.arguments).await {
                lookup_errors.insert(id.clone(), failed);
            }
        }
        let limit = self
            .inner
            .agent
            .with_agent(|a| a.spec().tool_concurrency_limit.max(1));
        let finishes = actions.iter().any(|(_, a)| a.tool_name == "finish");
        let finish_critique = actions
            .iter()
            .find(|(_, a)| a.tool_name == "finish")
            .and_then(|(_, a)| a.critic_result.clone());
        let ctx = ToolCallContext {
            cancel: cancel.child_token(),
        };
        let mut blocked: std::collections::HashMap<String, String> = Default::default();
        for (id, _) in &actions {
            if let Some(reason) = self.take_blocked_action(id).await? {
                blocked.insert(id.clone(), reason);
            }
        }
        let mut results = futures::stream::iter(actions.into_iter().map(|(id, a)| {
            let tool = runtime.tool(&a.tool_name).cloned();
            let ctx = ctx.clone();
            let lookup_error = lookup_errors.get(&id).cloned();
            let hook_block = blocked.remove(&id);
            async move {
                if let Some(reason) = hook_block {
                    return (id, a, Outcome::Blocked(reason));
                }
                let outcome = match (tool, a.action.clone()) {
                    _ if lookup_error.is_some() => {
                        Err(ActionFailure::Secrets(lookup_error.unwrap_or_default()))
                    }
                    (Some(t), Some(action)) => {
                        use tracing::Instrument;
                        let span = crate::telemetry::tool_span(&a.tool_name, &a.tool_call_id);
                        let result = t
                            .execute(action, &ctx)
                            .instrument(span.clone())
                            .await
                            .map_err(ActionFailure::Tool);
                        if let Err(e) = &result {
                            crate::telemetry::record_error(&span, &e.to_string());
                            crate::telemetry::count_tool_error(&a.tool_name);
                        }
                        result
                    }
                    (None, _) => Err(ActionFailure::NotAvailable(a.tool_name.clone())),
                    (_, None) => Err(ActionFailure::Unparsed),
                };
                (id, a, Outcome::Ran(outcome))
            }
        }))
        .buffered(limit);
        let secrets = self.secrets();
        while let Some((id, a, outcome)) = results.next().await {
            let outcome = match outcome {
                Outcome::Ran(o) => o,
                Outcome::Blocked(reason) => {
                    tracing::info!(tool = %a.tool_name, %reason, "action blocked by hook");
                    let mut ev = Event::with_source(
                        SourceType::Environment,
                        EventBody::UserReject(openhands_wire::event::UserRejectObservation {
                            tool_name: a.tool_name.clone(),
                            tool_call_id: a.tool_call_id.clone(),
                            rejection_reason: reason,
                            rejection_source: "hook".into(),
                            action_id: id.clone(),
                        }),
                    );
                    ev.parent_id = None;
                    self.emit_async(ev).await?;
                    continue;
                }
            };
            // Whatever a tool reports, no secret value leaves as an observation.
            let outcome = match outcome {
                Ok(mut observation) => {
                    mask_strings(&mut observation, &secrets);
                    Ok(observation)
                }
                Err(e) => Err(secrets.mask(&e.to_string())),
            };
            let post_hook = outcome.as_ref().ok().cloned();
            let rules = match &outcome {
                Ok(_) => self.path_rules(&a).await?,
                Err(_) => Vec::new(),
            };
            let mut ev = match outcome {
                Ok(observation) => Event::with_source(
                    SourceType::Environment,
                    EventBody::Observation(ObservationEvent {
                        tool_name: a.tool_name.clone(),
                        tool_call_id: a.tool_call_id.clone(),
                        observation,
                        action_id: id.clone(),
                        extended_content: rules,
                    }),
                ),
                Err(text) => Event::with_source(
                    SourceType::Agent,
                    EventBody::AgentError(AgentErrorEvent {
                        tool_name: a.tool_name.clone(),
                        tool_call_id: a.tool_call_id.clone(),
                        error: format!("Error executing tool '{}': {text}", a.tool_name),
                        classification: Some(ErrorClassification::new(
                            "agent_action",
                            true,
                            "retry",
                        )),
                    }),
                ),
            };
            ev.parent_id = None;
            let invoked = match &ev.body {
                EventBody::Observation(o)
                    if o.tool_name == "invoke_skill"
                        && !o.observation["is_error"].as_bool().unwrap_or(false) =>
                {
                    o.observation["skill_name"].as_str().map(String::from)
                }
                _ => None,
            };
            match invoked {
                Some(name) => {
                    self.commit_async(true, move |c| {
                        let list = &mut c.state_mut().invoked_skills;
                        if !list.contains(&name) {
                            list.push(name);
                        }
                        vec![ev]
                    })
                    .await?;
                }
                None => {
                    self.emit_async(ev).await?;
                }
            }
            if let Some(observation) = post_hook {
                self.post_tool_hooks(&id, &a, &observation).await?;
            }
        }
        if cancel.is_cancelled() {
            return Err(ConversationError::Interrupted);
        }
        if finishes {
            let critic = self.critic();
            self.finish_or_refine(critic.as_ref(), finish_critique.as_ref())
                .await?;
        }
        Ok(())
    }
}

impl LocalConversation {
    /// The path rules (`paths:` skills) a file-touching action activates,
    /// each once per conversation (recorded in `activated_path_rules`):
    /// the action's `path`, relative to the workspace; files outside it
    /// activate nothing.
    async fn path_rules(
        &self,
        action: &ActionEvent,
    ) -> Result<Vec<openhands_wire::content::TextContent>, ConversationError> {
        let Some(raw) = action
            .action
            .as_ref()
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            return Ok(Vec::new());
        };
        let Some(ctx) = self
            .inner
            .agent
            .with_agent(|a| a.spec().agent_context.clone())
        else {
            return Ok(Vec::new());
        };
        let path = std::path::Path::new(raw);
        let rel = if path.is_absolute() {
            let root = &self.inner.env.working_dir;
            match path.strip_prefix(root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => {
                    let (Ok(p), Ok(r)) = (
                        std::fs::canonicalize(path.parent().unwrap_or(path)),
                        std::fs::canonicalize(root),
                    ) else {
                        return Ok(Vec::new());
                    };
                    match p.strip_prefix(&r) {
                        Ok(dir) => dir.join(path.file_name().unwrap_or_default()),
                        Err(_) => return Ok(Vec::new()),
                    }
                }
            }
        } else {
            path.to_path_buf()
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let active: Vec<String> = self.inner.log.read(|c| {
            c.state
                .extra
                .get("activated_path_rules")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        });
        let Some((text, names)) = crate::skills::render::path_rules_for(&ctx, &rel, &active) else {
            return Ok(Vec::new());
        };
        self.commit_async(true, move |c| {
            let list = c
                .state_mut()
                .extra
                .entry("activated_path_rules")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = list {
                items.extend(names.into_iter().map(Value::String));
            }
            Vec::new()
        })
        .await?;
        Ok(vec![openhands_wire::content::TextContent::new(text)])
    }
}

/// Why an action gave no observation (the text goes to the model).
#[derive(Debug, thiserror::Error)]
enum ActionFailure {
    /// The secrets it names could not be fetched (which, and why).
    #[error("{0}")]
    Secrets(String),
    /// The tool failed.
    #[error("{0}")]
    Tool(#[source] crate::tool::ToolError),
    /// No tool of that name in the runtime.
    #[error("Tool '{0}' is not available.")]
    NotAvailable(String),
    /// The call had no parsed action.
    #[error("The action could not be parsed.")]
    Unparsed,
}

/// Why a tool call was refused before it ran (the text goes to the model).
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// No tool of that name.
    #[error("Tool '{name}' not found. Available: [{}]", .available.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", "))]
    UnknownTool {
        /// The name called.
        name: String,
        /// The runtime's tool names.
        available: Vec<String>,
    },
    /// Arguments that are JSON but not an object.
    #[error("Error validating arguments of tool '{tool}': expected a JSON object, got {got}")]
    NotObject {
        /// The tool.
        tool: String,
        /// What was given.
        got: Value,
    },
    /// Arguments that are not JSON.
    #[error(
        "Error parsing arguments of tool '{tool}' as JSON: {source}. Arguments were: {arguments}"
    )]
    NotJson {
        /// The tool.
        tool: String,
        /// The arguments as sent.
        arguments: String,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// The tool's own validation refused them.
    #[error("Error validating arguments of tool '{tool}': {source}")]
    Invalid {
        /// The tool.
        tool: String,
        /// The tool's complaint.
        source: crate::tool::ToolError,
    },
}

/// What became of one action.
enum Outcome {
    /// It ran: the observation, or why not.
    Ran(Result<Value, ActionFailure>),
    /// A PreToolUse hook blocked it, with this reason.
    Blocked(String),
}

struct ParsedCall {
    action: Value,
    risk: SecurityRisk,
    summary: String,
}

/// Validates one tool call: known tool, JSON object arguments, then the
/// tool's own validation. Errors are texts for the model.
fn parse_call(
    runtime: &AgentRuntime,
    call: &MessageToolCall,
    use_model_risk: bool,
) -> Result<ParsedCall, CallError> {
    let Some(tool) = runtime.tool(&call.name) else {
        return Err(CallError::UnknownTool {
            name: call.name.clone(),
            available: runtime.tool_names().to_vec(),
        });
    };
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let mut args: Map<String, Value> = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(m)) => m,
        Ok(got) => {
            return Err(CallError::NotObject {
                tool: call.name.clone(),
                got,
            });
        }
        Err(source) => {
            return Err(CallError::NotJson {
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                source,
            });
        }
    };
    let summary = match args.remove("summary") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        _ => format!("{}: {}", call.name, call.arguments),
    };
    // A read-only tool's label is ignored, as the reference does.
    let risk = match args.remove("security_risk") {
        Some(Value::String(s)) if use_model_risk && !tool.annotations().read_only_hint => {
            SecurityRisk::parse(&s).unwrap_or_default()
        }
        _ => SecurityRisk::Unknown,
    };
    let action = tool
        .parse_action(args)
        .map_err(|source| CallError::Invalid {
            tool: call.name.clone(),
            source,
        })?;
    Ok(ParsedCall {
        action,
        risk,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_middle_keeps_head_and_tail() {
        let s = "a".repeat(50) + &"b".repeat(50);
        let c = cut_middle(&s, 20);
        assert!(c.starts_with("aaaaaaaaaa\n<response clipped"));
        assert!(c.ends_with("bbbbbbbbbb"));
        assert_eq!(cut_middle("short", 20), "short");
    }
}
