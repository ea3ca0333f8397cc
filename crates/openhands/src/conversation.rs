//! [`ConversationBuilder`]: a local or remote [`Conversation`] with the
//! options the reference's `Conversation(...)` takes as keyword arguments.

use openhands_sdk::conversation::EventCallback;
use openhands_sdk::secrets::SecretSource;
use openhands_sdk::{
    Agent, AnyConversationError, Conversation, ConversationError, ConversationOptions,
    LocalConversation, RemoteOptions,
};
use openhands_wire::event::Event;
use openhands_wire::state::ConfirmationPolicy;
use openhands_workspace::Workspace;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Builds a [`Conversation`]: local when the workspace is a directory on
/// this machine, on an agent server when it is a
/// [`RemoteWorkspace`](openhands_workspace::RemoteWorkspace).
///
/// ```
/// use openhands::prelude::*;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let llm = openhands::testing::scripted_llm(r#"[{"text": "Hello!"}]"#)?;
/// let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
/// let dir = tempfile::tempdir()?;
/// let seen = Arc::new(AtomicUsize::new(0));
/// let counter = seen.clone();
/// let conversation = ConversationBuilder::new(agent, dir.path())
///     .persistence_dir(dir.path().join(".conversations"))
///     .max_iterations(50)
///     .on_event(move |_event| {
///         counter.fetch_add(1, Ordering::SeqCst);
///     })
///     .build()
///     .await?;
/// conversation.send_message("Say hello.").await?;
/// conversation.run().await?;
/// assert!(seen.load(Ordering::SeqCst) >= 3); // system prompt, message, answer...
/// assert!(dir.path().join(".conversations").is_dir());
/// # Ok(()) }
/// ```
#[must_use]
pub struct ConversationBuilder {
    agent: Agent,
    workspace: Workspace,
    options: ConversationOptions,
    remote: RemoteOptions,
}

impl ConversationBuilder {
    /// A conversation of `agent` in `workspace` (a path, a
    /// [`Workspace`]); every other option at the reference's default, the
    /// built-in sub-agents registered for the delegation tools.
    pub fn new(agent: Agent, workspace: impl Into<Workspace>) -> Self {
        // The task and delegate tools can start the built-in sub-agents
        // (general-purpose, code-explorer, bash-runner), as in the reference.
        let options = ConversationOptions {
            extensions: openhands_sdk::conversation::ExtensionOptions {
                agent_registry: openhands_sdk::subagent::AgentRegistry::new()
                    .with_builtins(openhands_tools::delegation::builtin_agent_definitions()),
                ..Default::default()
            },
            ..ConversationOptions::default()
        };
        Self {
            agent,
            workspace: workspace.into(),
            options,
            remote: RemoteOptions::default(),
        }
    }

    /// Persists the conversation under this directory (one sub-directory
    /// per conversation, the reference's layout), so it can be resumed.
    pub fn persistence_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.persistence_dir = Some(dir.into());
        self
    }

    /// Resumes (or creates) the conversation with this id.
    pub fn conversation_id(mut self, id: uuid::Uuid) -> Self {
        self.options.conversation_id = Some(id);
        self
    }

    /// Calls `callback` with every event, after it is persisted.
    pub fn on_event(mut self, callback: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        let callback: EventCallback = Arc::new(callback);
        self.options.listeners.callbacks.push(callback);
        self
    }

    /// Calls `callback` with every streamed piece of the LLM's answer (set
    /// `stream` on the LLM).
    pub fn on_token(
        mut self,
        callback: impl Fn(openhands_llm::StreamDelta) + Send + Sync + 'static,
    ) -> Self {
        self.options
            .listeners
            .token_callbacks
            .push(Arc::new(callback));
        self
    }

    /// Upper bound of agent steps per `run` (default 500).
    pub fn max_iterations(mut self, iterations: u32) -> Self {
        self.options.max_iteration_per_run = iterations;
        self
    }

    /// Whether the stuck detector may stop loops (default on).
    pub fn stuck_detection(mut self, on: bool) -> Self {
        self.options.stuck_detection = on;
        self
    }

    /// When the user must confirm actions before they run.
    pub fn confirmation_policy(mut self, policy: ConfirmationPolicy) -> Self {
        self.options.confirmation_policy = policy;
        self
    }

    /// The security analyzer rating actions (e.g. `{"kind": "PatternSecurityAnalyzer"}`).
    pub fn security_analyzer(mut self, analyzer: Value) -> Self {
        self.options.security_analyzer = Some(analyzer);
        self
    }

    /// A secret the agent's commands may use as `$NAME`; its value is
    /// masked in every observation.
    pub fn secret(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.secrets.push((
            name.into(),
            SecretSource::Static {
                value: value.into(),
                description: None,
            },
        ));
        self
    }

    /// A secret fetched from `url` (with these request headers) the first
    /// time an action names it, then cached and masked like any secret (the
    /// reference's `LookupSecret`; e.g. an agent server's
    /// `/api/settings/secrets/NAME`).
    ///
    /// ```no_run
    /// # async fn demo(agent: openhands::Agent) -> Result<(), Box<dyn std::error::Error>> {
    /// let conversation = openhands::ConversationBuilder::new(agent, ".")
    ///     .lookup_secret(
    ///         "GITHUB_TOKEN",
    ///         "http://127.0.0.1:8000/api/settings/secrets/GITHUB_TOKEN",
    ///         [(openhands::protocol::SESSION_API_KEY_HEADER, "my-session-key")],
    ///     )
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn lookup_secret<'a>(
        mut self,
        name: impl Into<String>,
        url: impl Into<String>,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let headers = headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        self.options.secrets.push((
            name.into(),
            SecretSource::Lookup {
                url: url.into(),
                headers,
                description: None,
            },
        ));
        self
    }

    /// A secret your code provides the value of (see
    /// [`openhands_sdk::secrets::SecretProvider`]): asked each time an
    /// action names it, masked like any secret; local conversations only.
    pub fn custom_secret(
        mut self,
        name: impl Into<String>,
        provider: impl openhands_sdk::secrets::SecretProvider,
    ) -> Self {
        self.options
            .secrets
            .push((name.into(), SecretSource::custom(provider)));
        self
    }

    /// Hooks run at the reference's hook events (the `hook_config` JSON).
    pub fn hook_config(mut self, config: openhands_sdk::hooks::HookConfig) -> Self {
        self.options.extensions.hook_config = Some(config);
        self
    }

    /// A plugin to load when the conversation starts (a local directory,
    /// `github:owner/repo` or a git URL; see `openhands_sdk::plugin`).
    pub fn plugin(mut self, source: openhands_sdk::plugin::PluginSource) -> Self {
        self.options.extensions.plugins.push(source);
        self
    }

    /// Any other option, on the options themselves.
    pub fn configure(mut self, edit: impl FnOnce(&mut ConversationOptions)) -> Self {
        edit(&mut self.options);
        self
    }

    /// Timeouts of a remote conversation (unused for a local one).
    pub fn remote_options(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// A conversation in this process, for what only local conversations
    /// offer (forks, statistics, LLM switches, resuming from disk). Fails
    /// with [`ConversationError::Invalid`] for a remote workspace.
    pub fn build_local(self) -> Result<LocalConversation, ConversationError> {
        match &self.workspace {
            Workspace::Local(w) => {
                LocalConversation::new(self.agent, w.working_dir(), self.options)
            }
            Workspace::Remote(_) => Err(ConversationError::Invalid(
                "build_local needs a local workspace; use build for a remote one".into(),
            )),
        }
    }

    /// The conversation; a remote one is created on its server here.
    pub async fn build(self) -> Result<Conversation, AnyConversationError> {
        Conversation::with_options(self.agent, &self.workspace, self.options, self.remote).await
    }
}
