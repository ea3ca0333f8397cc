//! [`LocalConversation`]: a conversation whose agent runs in this process,
//! a thin façade over its parts (see the lock rule in [`super`]).

use super::acp::slot::AcpSlot;
use super::agent_slot::AgentSlot;
use super::core::{Change, Core, state_update};
use super::error::ConversationError;
use super::extensions::state::Extensions;
use super::heads::Heads;
use super::listeners::{EventCallback, Listeners};
use super::llms::{ConversationLlms, profiles_home};
use super::log::EventLog;
use super::options::ConversationOptions;
use super::run_control::RunControl;
use super::trace::ConversationTrace;
use crate::agent::Agent;
use crate::profiles::ProfileSource;
use crate::secrets::SecretsRegistry;
use crate::tool::ToolEnv;
use openhands_llm::TokenCallback;
use openhands_wire::content::TextContent;
use openhands_wire::event::{Event, EventBody, MessageEvent, SourceType, UserRejectObservation};
use openhands_wire::message::{Message, Role};
use openhands_wire::state::{ConversationState, ExecutionStatus};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uuid::Uuid;

/// The conversation's parts (see [`super`] for which may call which) and
/// its immutable settings.
pub(crate) struct Inner {
    /// The conversation id.
    pub id: Uuid,
    /// The tools' environment (workspace, conversation directory, secrets,
    /// process policy, hosts); immutable.
    pub env: ToolEnv,
    /// Settings of the sub-agents it starts (its own, without listeners,
    /// id, tags, secrets and hooks); immutable.
    pub child_options: ConversationOptions,
    /// The events and the state; its lock is taken last.
    pub log: EventLog,
    /// Event and token listeners.
    pub listeners: Arc<Listeners>,
    /// One run at a time, cancellation, close.
    pub run: RunControl,
    /// The agent and its runtime.
    pub agent: AgentSlot,
    /// Skills, plugins, hooks, delegation agents; the first-use bootstrap.
    pub ext: Extensions,
    /// The LLM registry and the profiles.
    pub llms: ConversationLlms,
    /// The root span.
    pub trace: ConversationTrace,
    /// The ACP server of an `ACPAgent` conversation.
    pub acp: AcpSlot,
}

/// A conversation running its agent in this process. Cheap to clone.
#[derive(Clone)]
pub struct LocalConversation {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalConversation")
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

impl LocalConversation {
    pub(super) fn from_parts(
        id: Uuid,
        core: Core,
        agent: Agent,
        working_dir: PathBuf,
        options: &ConversationOptions,
    ) -> Self {
        let hook_config = options
            .extensions
            .hook_config
            .clone()
            .filter(|c| !c.is_empty());
        let hook_llm = agent.llm().clone();
        options.extensions.agent_registry.discover(
            &working_dir,
            options.extensions.skill_sources.home.as_deref(),
        );
        let home = profiles_home(options.extensions.skill_sources.home.as_deref());
        let profiles: Arc<dyn ProfileSource> = match &options.llms.profiles {
            Some(p) => p.clone(),
            None => Arc::new(crate::profiles::LlmProfileStore::new(
                crate::profiles::LlmProfileStore::default_dir(&home),
                options.cipher.clone(),
            )),
        };
        let meta_profiles: Arc<dyn crate::meta_profile::MetaProfileSource> =
            match &options.llms.meta_profiles {
                Some(m) => m.clone(),
                None => Arc::new(crate::profiles::meta_dir::MetaProfileDir::new(
                    crate::profiles::meta_dir::MetaProfileDir::default_dir(&home),
                )),
            };
        let conversation_dir = core.dir().map(Path::to_path_buf);
        let tool_secrets: Arc<dyn crate::tool::SecretAccess> = Arc::new(core.secrets.clone());
        let mut child_options = ConversationOptions {
            conversation_id: None,
            listeners: Default::default(),
            secrets: Vec::new(),
            tags: None,
            ..options.clone()
        };
        child_options.extensions.hook_config = None;
        child_options.extensions.plugins = Vec::new();
        child_options.trace.observability = None;
        Self {
            inner: Arc::new_cyclic(|weak: &std::sync::Weak<Inner>| {
                let env = ToolEnv {
                    working_dir,
                    conversation_dir,
                    secrets: tool_secrets,
                    exec: options.agent.exec_policy.clone(),
                    delegation: Some(Arc::new(crate::subagent::run::Delegation::new(
                        weak.clone(),
                        options.extensions.agent_registry.clone(),
                        options.extensions.skill_sources.home.clone(),
                    ))),
                    mcp_oauth_states: options.agent.mcp_oauth_states.clone(),
                    mcp_oauth_consent: options.agent.mcp_oauth_consent.clone(),
                    conversation_id: Some(id),
                    child_launcher: options.agent.child_launcher.clone(),
                    llm_switch: Some(Self::llm_switch(weak)),
                    profile_llms: Some(Arc::new(
                        crate::profiles::tool_llms::StoreProfileLlms::new(
                            weak.clone(),
                            profiles.clone(),
                        ),
                    )),
                    meta_profiles: Some(meta_profiles),
                };
                let hooks =
                    hook_config.map(|c| Self::runner_for(weak, c, &env, id.to_string(), hook_llm));
                Inner {
                    id,
                    log: EventLog::new(core),
                    llms: ConversationLlms::new(
                        agent.llm(),
                        profiles,
                        options
                            .listeners
                            .completion_logs_as_events
                            .then(|| Self::completion_log_sink(weak)),
                    ),
                    agent: AgentSlot::new(agent),
                    env,
                    child_options,
                    listeners: Arc::new(Listeners::new(
                        options.listeners.callbacks.clone(),
                        options.listeners.token_callbacks.clone(),
                    )),
                    run: RunControl::default(),
                    ext: Extensions::new(
                        options.extensions.skill_sources.clone(),
                        options.extensions.hook_config.clone(),
                        hooks,
                        options.extensions.plugins.clone(),
                        options.extensions.agent_registry.clone(),
                    ),
                    trace: ConversationTrace::start(
                        id,
                        options.trace.observability.clone(),
                        options.trace.observability_defaults.clone(),
                    ),
                    acp: AcpSlot::default(),
                }
            }),
        }
    }

    // ----- accessors -------------------------------------------------------

    /// The conversation id.
    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    /// The conversation's directory, when persisted.
    pub fn persistence_dir(&self) -> Option<PathBuf> {
        self.inner.log.read(|c| c.dir().map(Path::to_path_buf))
    }

    /// The workspace directory.
    pub fn working_dir(&self) -> PathBuf {
        self.inner.env.working_dir.clone()
    }

    /// The agent.
    pub fn agent(&self) -> Agent {
        self.inner.agent.agent()
    }

    /// Current execution status.
    pub fn status(&self) -> ExecutionStatus {
        self.inner.log.read(|c| c.state.execution_status)
    }

    /// A snapshot of the state (agent JSON and secrets protected as on disk).
    pub fn state_json(&self) -> Value {
        let mut v = self.inner.log.read(Core::state_json).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "stats".into(),
                serde_json::to_value(self.stats()).unwrap_or(Value::Null),
            );
        }
        v
    }

    /// A copy of the typed state.
    pub fn state(&self) -> ConversationState {
        let mut s = self.inner.log.read(|c| c.state.clone());
        s.stats = self.stats();
        s
    }

    /// A copy of every event.
    pub fn events(&self) -> Vec<Event> {
        self.inner.log.read_loaded(|c| c.events().to_vec())
    }
    /// The validated structured output (`response_schema` fields) of the
    /// last accepted call of `tool_name`, e.g. `finish`; `None` when it was
    /// not called. Builds the agent's tools if they are not built yet (may
    /// block while MCP servers start).
    pub fn structured_output(&self, tool_name: &str) -> Result<Option<Value>, ConversationError> {
        let runtime = self.runtime()?;
        let schema = runtime.response_schema(tool_name).cloned().ok_or_else(|| {
            ConversationError::Invalid(format!(
                "Tool '{tool_name}' has no response_schema configured."
            ))
        })?;
        let events = self.branch_events();
        crate::response_schema::structured_output(&events, tool_name, &schema)
            .map_err(|e| ConversationError::Invalid(e.0))
    }

    /// [`LocalConversation::structured_output`] parsed into `T`.
    pub fn structured_output_as<T: serde::de::DeserializeOwned>(
        &self,
        tool_name: &str,
    ) -> Result<Option<T>, ConversationError> {
        self.structured_output(tool_name)?
            .map(|v| {
                serde_json::from_value(v).map_err(|e| {
                    ConversationError::Invalid(format!("structured output does not parse: {e}"))
                })
            })
            .transpose()
    }

    /// Number of events.
    pub fn event_count(&self) -> usize {
        self.inner.log.read(Core::len)
    }

    /// Runs `f` over the events without copying them (`f` must not call
    /// the conversation).
    pub fn with_events<R>(&self, f: impl FnOnce(&[Event]) -> R) -> R {
        self.inner.log.read_loaded(|c| f(c.events()))
    }

    /// Runs `f` over the whole event log with its index by event id (the
    /// position in the log of an id, without scanning it; `f` must not call
    /// the conversation).
    pub fn with_events_indexed<R>(
        &self,
        f: impl FnOnce(&[Event], &dyn Fn(&str) -> Option<usize>) -> R,
    ) -> R {
        self.inner
            .log
            .read_loaded(|c| f(c.events(), &|id: &str| c.event_index(id)))
    }

    /// Runs `f` over the heads of every event (id, parent, kind, source,
    /// time), which also find an event's position by its id, without
    /// loading the events of a resumed log (`f` must not call the
    /// conversation). With [`LocalConversation::events_at`], how a long
    /// log is paged. The heads of a long resumed log are read from disk as
    /// `f` walks them (blocking file I/O): when that fails, `f`'s answer
    /// is dropped for the error.
    pub fn with_heads<R>(&self, f: impl FnOnce(&Heads<'_>) -> R) -> Result<R, ConversationError> {
        self.inner.log.read(|c| {
            let heads = c.heads();
            let answer = f(&heads);
            match heads.into_failure() {
                Some(e) => Err(e.into()),
                None => Ok(answer),
            }
        })
    }

    /// The events at `positions` of the log (positions past its end are
    /// left out), in that order. A resumed log that is not loaded is read
    /// from the events' files (blocking file I/O), without holding the
    /// conversation.
    pub fn events_at(&self, positions: &[usize]) -> Result<Vec<Event>, ConversationError> {
        let read = self.inner.log.read(|c| c.events_at(positions));
        Ok(read.run()?)
    }

    /// Runs `f` over the events of the active branch (the path from the
    /// HEAD to the root; the whole log until the HEAD is moved), which is
    /// what the agent works on (`f` must not call the conversation).
    pub fn with_branch<R>(&self, f: impl FnOnce(&[Event]) -> R) -> R {
        self.inner.log.read_loaded(|c| f(&c.branch()))
    }

    /// The events of the active branch, root first.
    pub fn branch_events(&self) -> Vec<Event> {
        self.with_branch(<[Event]>::to_vec)
    }

    /// Moves the HEAD to `event_id` (`None`: the empty tree), re-rooting
    /// the branch the agent works on next; every event stays in the log
    /// and what is appended next starts a new branch. Unlike
    /// [`LocalConversation::fork`], no conversation is created. An unknown
    /// id is refused with [`ConversationError::Invalid`]
    /// (`Unknown event_id: …`).
    pub fn navigate_to(&self, event_id: Option<&str>) -> Result<(), ConversationError> {
        self.inner.log.navigate_to(event_id).map_err(|e| match e {
            super::core::NavigateError::UnknownEvent(_) => {
                ConversationError::Invalid(e.to_string())
            }
            super::core::NavigateError::Store(e) => ConversationError::from(e),
        })
    }

    /// An event by id.
    pub fn event(&self, id: &str) -> Option<Event> {
        let at = self.inner.log.read(|c| c.event_index(id))?;
        self.event_at(at)
    }

    /// The event at position `at` of the log; `None` past its end or when
    /// its file can no longer be read (logged).
    pub(super) fn event_at(&self, at: usize) -> Option<Event> {
        match self.events_at(&[at]) {
            Ok(mut events) => events.pop(),
            Err(e) => {
                tracing::warn!(problem = %e, position = at, "event file unreadable");
                None
            }
        }
    }

    /// The secrets registry.
    pub fn secrets(&self) -> SecretsRegistry {
        self.inner.log.read(|c| c.secrets.clone())
    }

    /// Adds an event listener.
    pub fn add_callback(&self, cb: EventCallback) {
        self.inner.listeners.add(cb);
    }

    /// Adds a token listener (streaming deltas).
    pub fn add_token_callback(&self, cb: TokenCallback) {
        self.inner.listeners.add_token(cb);
    }

    // ----- event plumbing ---------------------------------------------------

    /// Commits one change (see [`EventLog::commit`]); the listeners get its
    /// events in log order. Blocking (file I/O): async code calls
    /// [`LocalConversation::commit_async`].
    pub(crate) fn commit<F>(&self, save: bool, f: F) -> Result<Vec<Event>, ConversationError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event>,
    {
        let listeners = &self.inner.listeners;
        self.inner.log.commit(save, f, |ev| listeners.dispatch(ev))
    }

    /// [`LocalConversation::commit`] on the commit threads, so that the
    /// disk is never written on an async worker thread.
    pub(crate) async fn commit_async<F>(
        &self,
        save: bool,
        f: F,
    ) -> Result<Vec<Event>, ConversationError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event> + Send + 'static,
    {
        let this = self.clone();
        off_runtime(move || this.commit(save, f)).await
    }

    /// Appends one event from async code (see [`LocalConversation::commit_async`]).
    pub(crate) async fn emit_async(&self, event: Event) -> Result<Event, ConversationError> {
        let mut v = self.commit_async(false, |_| vec![event]).await?;
        v.pop()
            .ok_or_else(|| ConversationError::Invalid("event not appended".into()))
    }

    /// Sets the execution status (announced and persisted when it changes)
    /// from async code.
    pub(crate) async fn set_status(
        &self,
        status: ExecutionStatus,
    ) -> Result<(), ConversationError> {
        if self.status() == status {
            return Ok(());
        }
        self.commit_async(true, move |c| c.set_status(status).into_iter().collect())
            .await?;
        Ok(())
    }

    // ----- user operations --------------------------------------------------

    /// Sends a user message (text). See [`LocalConversation::send`].
    pub fn send_message(&self, text: impl Into<String>) -> Result<Event, ConversationError> {
        self.send(Message::user(text))
    }

    /// Sends a message (user role by default; images allowed). Picked up by a
    /// running loop at its next LLM call, or by the next `run`.
    pub fn send(&self, message: Message) -> Result<Event, ConversationError> {
        self.ensure_initialized()?;
        let (mut extended_content, activated) = self.user_turn_extension(&message);
        let text = message_text(&message);
        let mut ev = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: message,
                llm_response_id: None,
                activated_skills: activated.clone(),
                extended_content: Vec::new(),
                sender: None,
                critic_result: None,
            }),
        );
        let from_user = ev.source == SourceType::User
            && matches!(&ev.body, EventBody::Message(m) if m.llm_message.role == Role::User);
        let verdict = self.user_prompt_hooks(&ev.id, &text, from_user);
        if let Some(context) = verdict.context {
            extended_content.push(TextContent::new(context));
        }
        if let EventBody::Message(m) = &mut ev.body {
            m.extended_content = extended_content;
        }
        let hook_events = verdict.events;
        let blocked = verdict.blocked;
        let message_id = ev.id.clone();
        let events = self.commit(true, move |c| {
            let mut out = hook_events;
            out.push(ev.clone());
            if let Some(reason) = blocked {
                tracing::warn!(message = %ev.id, %reason, "hook blocked a user message");
                c.state_mut()
                    .blocked_messages
                    .insert(ev.id.clone(), Value::String(reason));
            }
            c.state_mut().activated_knowledge_skills.extend(activated);
            c.state_mut().last_user_message_id = Some(ev.id.clone());
            out.push(state_update("last_user_message_id", json!(ev.id)));
            if matches!(
                c.state().execution_status,
                ExecutionStatus::Finished | ExecutionStatus::Stuck
            ) && let Some(u) = c.set_status(ExecutionStatus::Idle)
            {
                out.push(u);
            }
            out
        })?;
        self.inner.run.note_user_message();
        events
            .into_iter()
            .find(|e| e.id == message_id)
            .ok_or_else(|| ConversationError::Invalid("message not appended".into()))
    }

    /// The knowledge skills a user message activates (each once per
    /// conversation) and the context's user suffix, as `extended_content`.
    fn user_turn_extension(&self, message: &Message) -> (Vec<TextContent>, Vec<String>) {
        if message.role != Role::User {
            return (Vec::new(), Vec::new());
        }
        let Some(ctx) = self
            .inner
            .agent
            .with_agent(|a| a.spec().agent_context.clone())
        else {
            return (Vec::new(), Vec::new());
        };
        let text: Vec<&str> = message
            .content
            .iter()
            .filter_map(|c| match c {
                openhands_wire::content::Content::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        let already = self
            .inner
            .log
            .read(|c| c.state.activated_knowledge_skills.clone());
        match crate::skills::render::user_turn_extension(&ctx, &text.join("\n"), &already) {
            Some((text, names)) => (vec![TextContent::new(text)], names),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// Pauses: status `paused` and a `PauseEvent` now; a running loop stops
    /// after its in-flight LLM call and step.
    pub fn pause(&self) -> Result<(), ConversationError> {
        let status = self.status();
        if status.is_terminal() {
            return Ok(());
        }
        let ev = Event::with_source(SourceType::User, EventBody::Pause);
        self.commit(true, move |c| {
            let mut out = vec![ev];
            out.extend(c.set_status(ExecutionStatus::Paused));
            out
        })?;
        Ok(())
    }

    /// Interrupts: cancels the in-flight LLM call and tools, records an
    /// `InterruptEvent` and pauses.
    ///
    /// The interrupt and the pause are committed before the cancellation is
    /// signalled, so the loop, woken by the cancellation, always finds the
    /// conversation paused (cancelling first let it record its own end of
    /// run in between). The cancellation happens even when the commit fails.
    pub fn interrupt(&self) -> Result<(), ConversationError> {
        let ev = Event::with_source(SourceType::User, EventBody::Interrupt);
        let committed = self.commit(true, move |c| {
            let mut out = vec![ev];
            if !c.state().execution_status.is_terminal() {
                out.extend(c.set_status(ExecutionStatus::Paused));
            }
            out
        });
        self.inner.run.cancel();
        committed.map(|_| ())
    }

    /// Answers pending actions: accept (they run on the next `run`) or
    /// reject (each gets a `UserRejectObservation`; status becomes `idle`).
    pub fn respond_to_confirmation(
        &self,
        accept: bool,
        reason: Option<String>,
    ) -> Result<(), ConversationError> {
        if accept {
            return Ok(());
        }
        let reason = reason.unwrap_or_else(openhands_wire::event::default_rejection_reason);
        self.commit(true, move |c| {
            let pending = super::pending::unmatched_actions(&c.branch());
            let mut out: Vec<Event> = pending
                .iter()
                .map(|(id, a)| {
                    Event::with_source(
                        SourceType::Environment,
                        EventBody::UserReject(UserRejectObservation {
                            tool_name: a.tool_name.clone(),
                            tool_call_id: a.tool_call_id.clone(),
                            rejection_reason: reason.clone(),
                            rejection_source: "user".into(),
                            action_id: id.clone(),
                        }),
                    )
                })
                .collect();
            out.extend(c.set_status(ExecutionStatus::Idle));
            out
        })?;
        Ok(())
    }

    /// The text of the agent's final answer: the `finish` message or the last
    /// agent message.
    pub fn agent_final_response(&self) -> String {
        self.with_branch(|events| {
            for e in events.iter().rev() {
                match &e.body {
                    EventBody::Action(a) if a.tool_name == "finish" => {
                        if let Some(m) = a
                            .action
                            .as_ref()
                            .and_then(|v| v.get("message"))
                            .and_then(Value::as_str)
                        {
                            return m.to_string();
                        }
                    }
                    EventBody::Message(m) if e.source == SourceType::Agent => {
                        return m.llm_message.text();
                    }
                    _ => {}
                }
            }
            String::new()
        })
    }

    /// Stops any run, closes the tools (terminal sessions) and marks the
    /// conversation closed.
    pub async fn close(&self) {
        if !self.is_closed()
            && let Err(e) = self.session_end_hooks().await
        {
            tracing::warn!(conversation = %self.inner.id, error = %e, "SessionEnd hooks not recorded");
        }
        if let Some(runner) = self.hook_runner() {
            runner.stop_background().await;
        }
        self.inner.run.close();
        self.inner.trace.end();
        self.inner.agent.close().await;
        self.close_acp().await;
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.inner.run.is_closed()
    }
}

/// Runs blocking work (file I/O) on the commit threads (see
/// [`super::writer`]), or inline when no runtime is running. A panic in `f`
/// resumes in the caller; if the caller stops waiting, `f` still runs to its
/// end (a commit is never cut in half).
pub(super) async fn off_runtime<T, F>(f: F) -> Result<T, ConversationError>
where
    F: FnOnce() -> Result<T, ConversationError> + Send + 'static,
    T: Send + 'static,
{
    super::writer::run(f).await
}

/// The text parts of a message joined by newlines (what skill triggers and
/// hooks look at).
fn message_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            openhands_wire::content::Content::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
