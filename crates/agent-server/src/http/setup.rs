//! Plugging the conversation service into the server state.

use super::deferred::{DeferredInit, ReadyApp};
use super::routes::tools::default_entry;
use super::state::AppState;
use crate::config::Config;
use crate::service::conversations::{ConversationService, ServiceConfig, ServiceError};
use openhands_browser::BROWSER_TOOL_SET_NAME;
use openhands_sdk::tool::{Tool, ToolRegistry};
use openhands_tools::delegation::{START_CHILD_CONVERSATION_NAME, StartChildConversationTool};
use std::sync::Arc;

/// Starts the conversation service for the state's configuration with
/// `tools`, registers it (routes, event socket, conversation-scoped
/// bash/file/git routes) and reports the tool names.
pub async fn attach(state: AppState, mut tools: ToolRegistry) -> Result<AppState, ServiceError> {
    register_server_tools(&mut tools);
    let mut config = ServiceConfig::from_config(&state.config, tools.clone());
    if config.sandbox.all {
        // Never a silent unsandboxed run: a server told to sandboxes
        // everything does not start where sandboxes do not work.
        let tools = tokio::task::spawn_blocking(openhands_workspace::exec::sandbox::probe)
            .await
            .map_err(|e| ServiceError::Internal(format!("sandbox probe failed: {e}")))?
            .map_err(|e| ServiceError::Internal(format!("OH_SANDBOX=namespaces: {e}")))?;
        if !tools.fresh_proc {
            // Sandboxes share this container's `/proc`, and some start
            // before any conversation (`sandbox-exec`: the SSH relay's
            // sessions): this server's memory is closed to them from now.
            openhands_workspace::exec::sandbox::keep_memory_private()
                .map_err(|e| ServiceError::Internal(format!("OH_SANDBOX=namespaces: {e}")))?;
        }
    }
    config.profiles = Some(state.profiles.clone());
    config.meta_profiles = Some(state.meta_profiles.clone());
    config.settings = Some(state.settings.clone());
    config.profile_launcher = Some(crate::service::profile_launch::ProfileLauncher::new(
        state.agent_profiles.clone(),
        state.profiles.clone(),
        state.settings.clone(),
        config.skill_sources.clone(),
        state.meta_profiles.clone(),
    ));
    config.builtin_agents = openhands_tools::delegation::builtin_agent_definitions();
    let service = ConversationService::start(config).await?;
    let browser = browser_usable(&state.config);
    let mut state = state.with_tool_names(move || tools.names());
    // `enable_browser` and a missing Chromium take the browser tool set out
    // of the usable tools and mark it unusable in the catalog (it stays
    // registered, as in the reference).
    let registered = state.tool_names.clone();
    state.usable_tools = Arc::new(move || {
        registered()
            .into_iter()
            .filter(|n| browser || n != BROWSER_TOOL_SET_NAME)
            .collect()
    });
    let registered = state.tool_names.clone();
    state.tool_catalog = Some(Arc::new(move || {
        registered()
            .iter()
            .map(|n| {
                let mut entry = default_entry(n);
                if n == BROWSER_TOOL_SET_NAME {
                    entry.usable = browser;
                }
                entry
            })
            .collect()
    }));
    Ok(state.with_conversations(service))
}

/// Adds the tools only a server can run: `start_child_conversation`
/// (children start on this server, through the conversation service).
fn register_server_tools(tools: &mut ToolRegistry) {
    tools.register_factory(
        START_CHILD_CONVERSATION_NAME,
        Arc::new(|params, env| {
            let tool = StartChildConversationTool::from_params(params, env)?;
            Ok(vec![Arc::new(tool) as Arc<dyn Tool>])
        }),
    );
}

/// Whether conversations of this server can get the browser tools:
/// `enable_browser` is on and a Chromium is installed.
pub fn browser_usable(config: &Config) -> bool {
    config.enable_browser && openhands_browser::find_chromium().is_some()
}

/// [`attach`] with the default tool set (terminal, file editor, task
/// tracker, grep, glob, apply_patch, ...).
pub async fn attach_default(state: AppState) -> Result<AppState, ServiceError> {
    attach(state, openhands_tools::presets::default_registry()).await
}

/// A dormant server (`OH_DEFERRED_INIT`): only the open routes and
/// `/api/init` answer until `POST /api/init` delivers the configuration;
/// the ready application then gets the default tool set.
pub fn dormant(config: Config) -> AppState {
    let init = DeferredInit::new(
        config.clone(),
        Arc::new(|config, init| {
            Box::pin(async move {
                let state = attach_default(AppState::new(config).with_deferred_init(init))
                    .await?
                    .shared();
                if let Some(conversations) = &state.conversations {
                    let _capture = openhands_tools::terminal::warm_shell_snapshot(
                        &conversations.config().exec_policy,
                    );
                }
                let router = super::routes::build_router(state.clone());
                Ok(ReadyApp {
                    router,
                    close: Box::new(move || Box::pin(async move { state.close().await })),
                })
            })
        }),
    );
    AppState::new(config).with_deferred_init(init)
}
