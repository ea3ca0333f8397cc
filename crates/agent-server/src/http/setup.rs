//! Plugging the conversation service into the server state.

use super::state::AppState;
use crate::service::conversations::{ConversationService, ServiceConfig, ServiceError};
use openhands_sdk::tool::ToolRegistry;

/// Starts the conversation service for the state's configuration with
/// `tools`, registers it (routes, event socket, conversation-scoped
/// bash/file/git routes) and reports the tool names.
pub async fn attach(state: AppState, tools: ToolRegistry) -> Result<AppState, ServiceError> {
    let mut config = ServiceConfig::from_config(&state.config, tools.clone());
    config.profiles = Some(state.profiles.clone());
    let service = ConversationService::start(config).await?;
    Ok(state
        .with_tool_names(move || tools.names())
        .with_conversations(service))
}

/// [`attach`] with the default tool set (terminal, file editor, task
/// tracker, grep, glob, apply_patch, ...).
pub async fn attach_default(state: AppState) -> Result<AppState, ServiceError> {
    attach(state, openhands_tools::presets::default_registry()).await
}
