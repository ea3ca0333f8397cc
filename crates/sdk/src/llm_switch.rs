//! What a tool needs to switch its conversation's LLM to a saved profile
//! (the `switch_llm` and `route_task_to_model` tools through
//! `ToolEnv::llm_switch`), and why a switch
//! fails. A leaf module: the tool environment names it without depending
//! on the profile store.

/// Why switching to a profile failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileSwitchError {
    /// No profile of that name.
    #[error("LLM profile '{0}' was not found.")]
    NotFound(String),
    /// The profile exists but cannot be used (unreadable, bad JSON, a
    /// configuration no LLM can be built from).
    #[error("{0}")]
    Invalid(String),
    /// The conversation could not record the switch.
    #[error("{0}")]
    Conversation(String),
}

/// What the tool needs of its conversation.
pub trait LlmSwitch: Send + Sync {
    /// The saved profiles that may be switched to, sorted.
    fn profile_names(&self) -> Vec<String>;
    /// Switches the conversation's agent to profile `name`; returns the
    /// model now active. Blocking (reads the profile).
    fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError>;
    /// Switches the conversation's agent to `config`, an LLM given inline
    /// under the profile name `name` (registered as `profile:<name>`, as a
    /// saved profile would be); returns the model now active.
    fn switch_profile_config(
        &self,
        name: &str,
        config: openhands_wire::LlmConfig,
    ) -> Result<String, ProfileSwitchError>;
    /// The last `limit` messages of the conversation (user and agent
    /// `MessageEvent`s with text), each as `<source>: <text>`, oldest first.
    fn recent_messages(&self, limit: usize) -> Vec<String>;
}
