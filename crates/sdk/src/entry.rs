//! [`Conversation`]: one entry point for local and remote conversations,
//! chosen from the workspace as the reference's `Conversation(agent,
//! workspace=...)` does — a [`Workspace::Local`] runs the agent in this
//! process, a [`Workspace::Remote`] creates the conversation on its server.

use crate::agent::Agent;
use crate::conversation::{ConversationError, ConversationOptions, LocalConversation};
use crate::remote::{RemoteConversation, RemoteError, RemoteOptions};
use crate::secrets::SecretSource;
use openhands_protocol::conversations::StartConversationRequest;
use openhands_wire::event::Event;
use openhands_wire::state::ExecutionStatus;
use openhands_workspace::Workspace;
use serde_json::{Map, Value};
use uuid::Uuid;

/// An error of either kind of conversation.
#[derive(Debug, thiserror::Error)]
pub enum AnyConversationError {
    /// From the local conversation.
    #[error(transparent)]
    Local(#[from] ConversationError),
    /// From the agent server.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// A local-only option was set for a remote conversation.
    #[error("option '{0}' is not supported for a remote conversation")]
    UnsupportedOption(&'static str),
}

/// A local or remote conversation.
#[derive(Debug, Clone)]
pub enum Conversation {
    /// Runs in this process.
    Local(LocalConversation),
    /// Runs on an agent server.
    Remote(RemoteConversation),
}

/// The agent as the server's start request carries it (LLM key exposed).
pub fn agent_json(agent: &Agent) -> Result<Value, serde_json::Error> {
    let spec = agent.spec();
    let mut v = serde_json::to_value(spec)?;
    if let Value::Object(m) = &mut v {
        m.insert("llm".into(), spec.llm.to_value_exposing_secrets()?);
        m.entry("kind")
            .or_insert_with(|| Value::String("Agent".into()));
    }
    Ok(v)
}

/// The start request of a remote conversation from local options; options
/// that only make sense in this process are refused by name.
pub fn start_request(
    agent: &Agent,
    working_dir: &str,
    options: &ConversationOptions,
) -> Result<StartConversationRequest, AnyConversationError> {
    if options.persistence_dir.is_some() {
        return Err(AnyConversationError::UnsupportedOption("persistence_dir"));
    }
    if !options.listeners.callbacks.is_empty() || !options.listeners.token_callbacks.is_empty() {
        return Err(AnyConversationError::UnsupportedOption(
            "callbacks (use RemoteConversation::subscribe)",
        ));
    }
    if options.cipher.is_some() {
        return Err(AnyConversationError::UnsupportedOption("cipher"));
    }
    if options.extensions.hook_config.is_some() {
        return Err(AnyConversationError::UnsupportedOption("hook_config"));
    }
    let agent = agent_json(agent).map_err(|e| {
        AnyConversationError::Remote(RemoteError::Protocol {
            what: "agent".into(),
            detail: e.to_string(),
        })
    })?;
    let mut req = StartConversationRequest::new(agent, working_dir);
    req.conversation_id = options.conversation_id;
    req.max_iterations = i64::from(options.max_iteration_per_run);
    req.stuck_detection = options.stuck_detection;
    req.stuck_detection_thresholds = Some(options.stuck_detection_thresholds);
    req.confirmation_policy = options.confirmation_policy.clone();
    req.security_analyzer = options.security_analyzer.clone();
    req.tags = options.tags.clone();
    if !options.extensions.plugins.is_empty() {
        // Local plugin paths name directories on the server's machine.
        req.plugins = serde_json::to_value(&options.extensions.plugins).ok();
    }
    req.client_tools = options
        .agent
        .client_tools
        .iter()
        .map(crate::client_tool::ClientToolSpec::to_json)
        .collect();
    req.secrets = secrets_json(&options.secrets)?;
    Ok(req)
}

/// Secrets as a server takes them; a custom source is refused (its value
/// is computed in this process, the server cannot ask it).
fn secrets_json(
    secrets: &[(String, SecretSource)],
) -> Result<Map<String, Value>, AnyConversationError> {
    let mut out = Map::new();
    for (name, source) in secrets {
        let value = match source {
            SecretSource::Static { value, .. } => Value::String(value.clone()),
            SecretSource::Lookup { url, headers, .. } => serde_json::json!({
                "kind": "LookupSecret", "url": url, "headers": headers,
            }),
            SecretSource::Custom(_) => {
                return Err(AnyConversationError::UnsupportedOption(
                    "secrets with a custom source (use a static or lookup secret)",
                ));
            }
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

impl Conversation {
    /// A conversation for `agent` in `workspace` (a directory path or a
    /// [`Workspace`]) with default options: local in this process, or
    /// created on the remote workspace's server.
    pub async fn new(
        agent: Agent,
        workspace: impl Into<Workspace>,
    ) -> Result<Self, AnyConversationError> {
        Self::with_options(
            agent,
            &workspace.into(),
            ConversationOptions::default(),
            RemoteOptions::default(),
        )
        .await
    }

    /// A conversation for `agent` in `workspace`: local in this process, or
    /// created on the remote workspace's server (`remote` sets its
    /// timeouts and is unused for a local one). A local agent with MCP
    /// servers using OAuth gets the user's token store and interactive
    /// consent unless `options` name their own
    /// (`crate::mcp_oauth::user_defaults`).
    pub async fn with_options(
        agent: Agent,
        workspace: &Workspace,
        options: ConversationOptions,
        remote: RemoteOptions,
    ) -> Result<Self, AnyConversationError> {
        match workspace {
            Workspace::Local(w) => {
                // OAuth MCP servers: the user's token store (shared with
                // the command line) and consent asked when they start.
                let mut options = options;
                crate::mcp_oauth::user_defaults(&mut options.agent, &agent.spec().mcp_config)
                    .map_err(|e| {
                        ConversationError::Invalid(format!("MCP OAuth token store: {e}"))
                    })?;
                Ok(Conversation::Local(LocalConversation::new(
                    agent,
                    w.working_dir(),
                    options,
                )?))
            }
            Workspace::Remote(w) => {
                let req = start_request(&agent, w.working_dir(), &options)?;
                Ok(Conversation::Remote(
                    RemoteConversation::create(w.host(), w.api_key(), &req, remote).await?,
                ))
            }
        }
    }

    /// The conversation id.
    pub fn id(&self) -> Uuid {
        match self {
            Conversation::Local(c) => c.id(),
            Conversation::Remote(c) => c.id(),
        }
    }

    /// The local conversation, for what only it offers (forks, statistics,
    /// LLM switches); `None` for a remote one.
    pub fn as_local(&self) -> Option<&LocalConversation> {
        match self {
            Conversation::Local(c) => Some(c),
            Conversation::Remote(_) => None,
        }
    }

    /// Whether it runs on an agent server.
    pub fn is_remote(&self) -> bool {
        matches!(self, Conversation::Remote(_))
    }

    /// Sends a user text message.
    pub async fn send_message(&self, text: &str) -> Result<(), AnyConversationError> {
        match self {
            Conversation::Local(c) => c.send_message(text).map(drop).map_err(Into::into),
            Conversation::Remote(c) => c.send_message(text).await.map_err(Into::into),
        }
    }

    /// Adds or replaces secrets (a custom source only for a local
    /// conversation).
    pub async fn update_secrets(
        &self,
        secrets: Vec<(String, SecretSource)>,
    ) -> Result<(), AnyConversationError> {
        match self {
            Conversation::Local(c) => c.update_secrets(secrets).map_err(Into::into),
            Conversation::Remote(c) => {
                let json = secrets_json(&secrets)?;
                c.update_secrets(json).await.map_err(Into::into)
            }
        }
    }

    /// Runs until the agent stops; answers the final status.
    pub async fn run(&self) -> Result<ExecutionStatus, AnyConversationError> {
        match self {
            Conversation::Local(c) => c.run().await.map_err(Into::into),
            Conversation::Remote(c) => c.run().await.map_err(Into::into),
        }
    }

    /// Pauses the run.
    pub async fn pause(&self) -> Result<(), AnyConversationError> {
        match self {
            Conversation::Local(c) => c.pause().map_err(Into::into),
            Conversation::Remote(c) => c.pause().await.map_err(Into::into),
        }
    }

    /// Interrupts the run.
    pub async fn interrupt(&self) -> Result<(), AnyConversationError> {
        match self {
            Conversation::Local(c) => c.interrupt().map_err(Into::into),
            Conversation::Remote(c) => c.interrupt().await.map_err(Into::into),
        }
    }

    /// Accepts or rejects actions waiting for confirmation.
    pub async fn respond_to_confirmation(
        &self,
        accept: bool,
        reason: Option<String>,
    ) -> Result<(), AnyConversationError> {
        match self {
            Conversation::Local(c) => c
                .respond_to_confirmation(accept, reason)
                .map_err(Into::into),
            Conversation::Remote(c) => c
                .respond_to_confirmation(accept, reason)
                .await
                .map_err(Into::into),
        }
    }

    /// Asks the agent's LLM a question outside the conversation.
    pub async fn ask_agent(&self, question: &str) -> Result<String, AnyConversationError> {
        match self {
            Conversation::Local(c) => c.ask_agent(question).await.map_err(Into::into),
            Conversation::Remote(c) => c.ask_agent(question).await.map_err(Into::into),
        }
    }

    /// Runs the agent's tool `tool_name` on `action` outside the agent loop
    /// and returns its observation (see `LocalConversation::execute_tool`;
    /// a remote conversation asks its server).
    pub async fn execute_tool(
        &self,
        tool_name: &str,
        action: Value,
    ) -> Result<Value, AnyConversationError> {
        match self {
            Conversation::Local(c) => c.execute_tool(tool_name, action).await.map_err(Into::into),
            Conversation::Remote(c) => c.execute_tool(tool_name, action).await.map_err(Into::into),
        }
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        match self {
            Conversation::Local(c) => c.events(),
            Conversation::Remote(c) => c.events(),
        }
    }

    /// The (last known) execution status.
    pub fn status(&self) -> ExecutionStatus {
        match self {
            Conversation::Local(c) => c.status(),
            Conversation::Remote(c) => c.status(),
        }
    }
}
