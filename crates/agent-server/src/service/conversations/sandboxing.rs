//! Which conversations run sandboxed and the execution policy that puts
//! them there: the server's policy plus a [`Sandbox`] writing only to the
//! conversation's workspace, hiding the server's data and the other
//! conversations' workspaces.

use super::config::ServiceConfig;
use super::error::ServiceError;
use openhands_protocol::conversations::loc;
use openhands_protocol::validation::{ValidationError, ValidationIssue};
use openhands_workspace::exec::sandbox::HiddenPaths;
use openhands_workspace::exec::{ExecPolicy, Sandbox, SandboxError};
use serde_json::json;
use std::path::Path;

/// The runtime name a start request uses to ask for a sandbox (ours; the
/// reference knows `local` and `docker`).
pub const SANDBOX_RUNTIME: &str = "sandbox";

/// Whether a start request's `conversation_runtime` asks for a sandbox:
/// `None`/`local` no, `sandbox` yes, anything else is refused.
pub fn requested(runtime: Option<&str>) -> Result<bool, ServiceError> {
    match runtime {
        None | Some("local") => Ok(false),
        Some(SANDBOX_RUNTIME) => Ok(true),
        Some(_) => Err(ServiceError::Invalid(
            "This server only runs local conversations (conversation_runtime 'local' or 'sandbox')"
                .into(),
        )),
    }
}

/// The execution policy of a conversation in `workspace`: the server's,
/// inside a sandbox when the conversation asked for one or the server
/// sandboxes every conversation. Blocking (probe, directories).
pub fn exec_policy(
    config: &ServiceConfig,
    workspace: &Path,
    sandboxed: bool,
    others: HiddenPaths,
) -> Result<ExecPolicy, SandboxError> {
    let mut policy = config.exec_policy.clone();
    if sandboxed || config.sandbox.all {
        policy.sandbox = Some(Sandbox::with_hidden(
            config.sandbox.config,
            workspace,
            config.sandbox.hidden.iter().cloned(),
            Some(others),
        )?);
    }
    Ok(policy)
}

/// The 422 for a sandbox that cannot be set up at creation, naming
/// `conversation_runtime` (and `OH_SANDBOX` when the server asked for it).
pub fn refused(error: &SandboxError, server_wide: bool) -> ServiceError {
    let message = if server_wide {
        format!("OH_SANDBOX=namespaces but {error}")
    } else {
        error.to_string()
    };
    ValidationError::new(vec![
        ValidationIssue::new(
            "value_error",
            loc(&["body", "conversation_runtime"]),
            format!("Value error, {message}"),
            json!(SANDBOX_RUNTIME),
        )
        .with_ctx(json!({ "error": message })),
    ])
    .into()
}
