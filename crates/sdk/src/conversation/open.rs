//! Opening a conversation: a new one (its directory and `base_state.json`
//! written), or a stored one resumed (events read back, the agent rebuilt
//! from its stored configuration unless one is given, actions a crash left
//! unanswered told as interrupted).

use super::core::{Core, agent_from_json, load_state};
use super::error::ConversationError;
use super::event_store::{EventStore, StoreError};
use super::journal::Journal;
use super::local::LocalConversation;
use super::options::ConversationOptions;
use crate::agent::Agent;
use crate::secrets::SecretsRegistry;
use openhands_wire::event::{ErrorClassification, Event, EventBody, SourceType};
use openhands_wire::ids::hex_id;
use openhands_wire::state::{ConversationState, ExecutionStatus, WorkspaceSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use uuid::Uuid;

impl LocalConversation {
    /// Creates a conversation for `agent` working in `workspace`, or resumes
    /// the persisted one with the same id.
    pub fn new(
        agent: Agent,
        workspace: impl AsRef<Path>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let id = options.conversation_id.unwrap_or_else(Uuid::new_v4);
        if let Some(c) = agent.spec().critic.as_ref().filter(|c| !c.is_null()) {
            crate::critic::Critic::from_json(c)
                .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        }
        let agent = with_client_tools(agent, &options.agent.client_tools)?;
        if let Some(root) = &options.persistence_dir {
            let dir = root.join(hex_id(&id));
            if dir.join(super::core::BASE_STATE_FILE).exists() {
                return Self::resume_dir(dir, Some(agent), options);
            }
        }
        let working_dir = absolute(workspace.as_ref());
        let mut state = ConversationState::new(
            id.to_string(),
            Value::Null,
            WorkspaceSpec::local(working_dir.to_string_lossy()),
        );
        state.max_iterations = options.max_iteration_per_run;
        state.stuck_detection = options.stuck_detection;
        state.stuck_detection_thresholds = Some(options.stuck_detection_thresholds);
        state.confirmation_policy = options.confirmation_policy.clone();
        if let Some(tags) = &options.tags {
            state.tags = tags.clone();
        }
        state.security_analyzer = options.security_analyzer.clone();
        let dir = options
            .persistence_dir
            .as_ref()
            .map(|root| root.join(hex_id(&id)));
        if let Some(d) = &dir {
            state.persistence_dir = Some(d.to_string_lossy().into_owned());
            std::fs::create_dir_all(d).map_err(|e| StoreError::io("create", d, e))?;
        }
        let secrets = SecretsRegistry::new();
        secrets.update(options.secrets.clone());
        let core = Core::new(
            state,
            agent.spec().clone(),
            Journal::loaded(Vec::new()),
            dir,
            options.durability,
            options.cipher.clone(),
            secrets,
        )?;
        core.save_state()?;
        Ok(Self::from_parts(id, core, agent, working_dir, &options))
    }

    /// Resumes the conversation stored in `<root>/<id hex>/`. With `agent`
    /// `None` the stored agent configuration is used (its LLM key must be
    /// decryptable or supplied otherwise).
    pub fn resume(
        root: &Path,
        id: Uuid,
        agent: Option<Agent>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let dir = root.join(hex_id(&id));
        if !dir.join(super::core::BASE_STATE_FILE).exists() {
            return Err(ConversationError::NotFound(id.to_string()));
        }
        let options = ConversationOptions {
            persistence_dir: Some(root.to_path_buf()),
            conversation_id: Some(id),
            ..options
        };
        Self::resume_dir(dir, agent, options)
    }

    fn resume_dir(
        dir: PathBuf,
        agent: Option<Agent>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let mut state = load_state(&dir)?;
        if let Some(a) = state.security_analyzer.as_mut() {
            super::core::unprotect_secret_fields(a, options.cipher.as_ref());
        }
        let id = Uuid::try_parse(&state.id)
            .or_else(|_| {
                dir.file_name()
                    .and_then(|n| n.to_str())
                    .map(Uuid::try_parse)
                    .unwrap_or_else(|| Uuid::try_parse(""))
            })
            .map_err(|_| ConversationError::Invalid(format!("bad conversation id in {dir:?}")))?;
        let store = EventStore::open(&dir, options.durability)?;
        let (journal, problems) = Journal::resumed(&store)?;
        for p in &problems {
            tracing::warn!(problem = %p, "skipping unreadable event file");
        }
        let cipher = options.cipher.clone();
        let agent = match agent {
            Some(a) if options.agent.client_tools.is_empty() => {
                // The caller's agent keeps the client tools the stored one
                // had (the reference recovers them the same way).
                let stored = persisted_client_tools(&state.agent);
                with_client_tools(a, &stored)?
            }
            Some(a) => with_client_tools(a, &options.agent.client_tools)?,
            None => {
                let spec = agent_from_json(&state.agent, cipher.as_ref()).map_err(|e| {
                    ConversationError::Invalid(format!("stored agent is invalid: {e}"))
                })?;
                Agent::new(spec, options.agent.tool_registry.clone())?
            }
        };
        let secrets = SecretsRegistry::from_json(
            &serde_json::to_value(&state.secret_registry).unwrap_or(Value::Null),
            cipher.as_ref(),
        );
        secrets.update(options.secrets.clone());
        let was_running = state.execution_status == ExecutionStatus::Running;
        if was_running {
            // The process that ran it is gone; the run continues on `run`.
            state.execution_status = ExecutionStatus::Idle;
        }
        if state.persistence_dir.is_none() {
            state.persistence_dir = Some(dir.to_string_lossy().into_owned());
        }
        let working_dir = PathBuf::from(&state.workspace.working_dir);
        let core = Core::new(
            state,
            agent.spec().clone(),
            journal,
            Some(dir),
            options.durability,
            cipher,
            secrets,
        )?;
        core.save_state()?;
        let conversation = Self::from_parts(id, core, agent, working_dir, &options);
        if was_running {
            conversation.abandon_interrupted_actions()?;
        }
        Ok(conversation)
    }

    /// After a crash mid-run, actions that were started but never answered
    /// may have half happened: rather than running them again, the model is
    /// told they were interrupted (as the reference does).
    fn abandon_interrupted_actions(&self) -> Result<(), ConversationError> {
        self.commit(false, |c| {
            super::pending::unmatched_actions(&c.branch())
                .into_iter()
                .map(|(id, a)| {
                    let mut ev = Event::with_source(
                        SourceType::Agent,
                        EventBody::AgentError(openhands_wire::event::AgentErrorEvent {
                            tool_name: a.tool_name.clone(),
                            tool_call_id: a.tool_call_id.clone(),
                            error: format!(
                                "The conversation was interrupted while '{}' was running; \
                                 its outcome is unknown. Check the current state before \
                                 repeating it.",
                                a.tool_name
                            ),
                            classification: Some(ErrorClassification::new(
                                "agent_action",
                                true,
                                "retry",
                            )),
                        }),
                    );
                    ev.parent_id = Some(id);
                    ev
                })
                .collect()
        })?;
        Ok(())
    }
}

/// The client tools in a stored agent's tool list.
fn persisted_client_tools(agent: &Value) -> Vec<crate::client_tool::ClientToolSpec> {
    agent
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::from_value::<openhands_wire::tool::ToolSpec>(t.clone()).ok())
        .filter_map(|t| crate::client_tool::ClientToolSpec::from_tool_spec(&t))
        .collect()
}

/// `agent` offering the client tools `specs` too.
fn with_client_tools(
    agent: Agent,
    specs: &[crate::client_tool::ClientToolSpec],
) -> Result<Agent, ConversationError> {
    if specs.is_empty() {
        return Ok(agent);
    }
    agent
        .with_client_tools(specs)
        .map_err(|e| ConversationError::Agent(e.into()))
}

/// `p` made absolute against the current directory (unchanged when that
/// cannot be read).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
