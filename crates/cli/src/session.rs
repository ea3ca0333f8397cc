//! Starting and reopening conversations with the resolved options; shared
//! by `run`, `resume` and the interactive session.

use crate::options::SessionConfig;
use anyhow::Context;
use openhands_sdk::conversation::EventCallback;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use std::path::PathBuf;
use uuid::Uuid;

/// The options plus where the agent works and conversations are stored.
#[derive(Debug, Clone)]
pub struct Session {
    /// Resolved options.
    pub config: SessionConfig,
    /// The folder the agent works in (new conversations).
    pub workspace: PathBuf,
    /// Where conversations are stored.
    pub root: PathBuf,
}

impl Session {
    /// The agent of these options.
    pub fn agent(&self) -> anyhow::Result<Agent> {
        Agent::new(
            self.config.spec.clone(),
            openhands_tools::presets::default_registry(),
        )
        .context("cannot set up the agent")
    }

    fn options(
        &self,
        id: Option<Uuid>,
        callbacks: Vec<EventCallback>,
    ) -> anyhow::Result<ConversationOptions> {
        let mut exec_policy = openhands_workspace::exec::ExecPolicy::default();
        if let Some(config) = self.config.sandbox {
            // The conversations and the settings (keys, secrets) stay
            // out of the agent's sight.
            let hidden = [self.root.clone(), crate::paths::openhands_dir()];
            exec_policy.sandbox = Some(
                openhands_workspace::exec::Sandbox::with_hidden(
                    config,
                    &self.workspace,
                    hidden,
                    None,
                )
                .context("--sandbox")?,
            );
        }
        Ok(ConversationOptions {
            conversation_id: id,
            persistence_dir: Some(self.root.clone()),
            secrets: self.config.secrets.clone(),
            max_iteration_per_run: self.config.max_iterations,
            confirmation_policy: self.config.confirm.policy(),
            security_analyzer: self.config.confirm.security_analyzer(),
            listeners: openhands_sdk::conversation::ListenerOptions {
                callbacks,
                ..Default::default()
            },
            agent: openhands_sdk::conversation::AgentOptions {
                exec_policy,
                mcp_oauth_states: self
                    .config
                    .mcp_oauth_states
                    .clone()
                    .map(|s| -> std::sync::Arc<dyn openhands_mcp::oauth::OAuthStateStore> { s }),
                tool_registry: openhands_tools::presets::default_registry(),
                ..Default::default()
            },
            extensions: openhands_sdk::conversation::ExtensionOptions {
                agent_registry: openhands_sdk::subagent::AgentRegistry::new()
                    .with_builtins(openhands_tools::delegation::builtin_agent_definitions()),
                ..Default::default()
            },
            llms: openhands_sdk::conversation::LlmOptions {
                meta_profiles: Some(std::sync::Arc::new(
                    openhands_sdk::profiles::meta_dir::MetaProfileDir::new(
                        crate::paths::openhands_dir().join("meta-profiles"),
                    ),
                )),
                ..Default::default()
            },
            ..ConversationOptions::default()
        })
    }

    /// Starts a new conversation (with `id` when given).
    pub fn start(
        &self,
        id: Option<Uuid>,
        callbacks: Vec<EventCallback>,
    ) -> anyhow::Result<LocalConversation> {
        let agent = self.agent()?;
        LocalConversation::new(agent, &self.workspace, self.options(id, callbacks)?)
            .context("cannot start the conversation")
    }

    /// Reopens a stored conversation with this session's agent. The
    /// confirmation mode and iteration limit change only when they were
    /// asked for (flag or settings).
    pub fn resume(
        &self,
        id: Uuid,
        callbacks: Vec<EventCallback>,
    ) -> anyhow::Result<LocalConversation> {
        let agent = self.agent()?;
        let conversation = LocalConversation::resume(
            &self.root,
            id,
            Some(agent),
            self.options(Some(id), callbacks)?,
        )
        .with_context(|| format!("cannot resume {id} from {}", self.root.display()))?;
        if self.config.max_iterations_explicit {
            conversation.set_max_iterations(self.config.max_iterations)?;
        }
        if self.config.confirm_explicit {
            conversation.set_confirmation_policy(self.config.confirm.policy())?;
            conversation.set_security_analyzer(self.config.confirm.security_analyzer())?;
        }
        Ok(conversation)
    }
}
