//! Credential bindings of the server's conversations (the reference's
//! `activate_credential_binding`, `_resolve_credential_bindings` and
//! `_scrub_persisted_credentials`): a binding activated for a loaded
//! `ACPAgent` conversation before its ACP server starts replaces the
//! conversation's copy of the secret; one for a conversation that is not
//! loaded (or not created yet) waits and is applied when it loads. Once
//! bound, the credential is scrubbed from what is persisted (`meta.json`'s
//! secrets, `base_state.json`'s secrets and `agent_context.secrets`, the
//! durable `acp/codex/auth.json`) and `meta.json` records the name in
//! `required_runtime_credential_bindings`: after a restart the conversation
//! is not loaded again until a binding is activated (409, retryable).

use super::error::ServiceError;
use super::live::Live;
use openhands_sdk::credential::http::HttpVersionedCredentialBinding;
use openhands_sdk::credential::{
    ActivationError, CredentialError, VersionedCredentialBinding, is_valid_credential,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The bindings of one conversation, by secret name.
pub(super) type Bound = BTreeMap<String, Arc<HttpVersionedCredentialBinding>>;

/// Why a binding was not activated.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// The ACP server has started (or the agent is not an `ACPAgent`, or
    /// the URL differs from the active binding's).
    #[error("Credential binding activation arrived after ACP initialization")]
    TooLate,
    /// The binding's source refused or failed.
    #[error(transparent)]
    Credential(#[from] CredentialError),
    /// The conversation could not record it.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<ActivationError> for BindingError {
    fn from(e: ActivationError) -> Self {
        match e {
            ActivationError::TooLate => BindingError::TooLate,
            ActivationError::Unsupported(name) => BindingError::Service(ServiceError::Invalid(
                format!("Credential binding is not supported for secret '{name}'"),
            )),
            e @ ActivationError::Sandboxed => {
                BindingError::Service(ServiceError::Invalid(e.to_string()))
            }
            ActivationError::Failed(m) => BindingError::Service(ServiceError::Internal(m)),
        }
    }
}

/// Whether the launched agent profile of `meta` lets the conversation use
/// the secret `name` (no profile, or no `secret_refs`: every secret).
pub(super) fn profile_allows_secret(launched_agent_profile: &Value, name: &str) -> bool {
    match launched_agent_profile.get("secret_refs") {
        Some(Value::Array(refs)) => refs.iter().any(|r| r.as_str() == Some(name)),
        _ => true,
    }
}

/// The names `required` lists (`required_runtime_credential_bindings`).
pub(super) fn required_names(required: &[Value]) -> Vec<String> {
    required
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The durable credential file the reference wrote before bindings.
fn legacy_auth_file(conversation_dir: &Path) -> std::path::PathBuf {
    conversation_dir.join("acp").join("codex").join("auth.json")
}

/// Activates `bound` on the freshly loaded `live` (dropped for an agent
/// that is not an `ACPAgent`) and scrubs the conversation's copies.
pub(super) async fn apply(live: &Live, bound: &Bound, dir: &Path) -> Result<(), BindingError> {
    for (name, binding) in bound {
        let binding: Arc<dyn VersionedCredentialBinding> = binding.clone();
        live.conv.activate_credential_binding(name, binding).await?;
        scrub(live, name, dir, bound.get(name).map(|b| b.as_ref())).await?;
    }
    Ok(())
}

/// Removes the secret `name` from `meta.json`, records it as required and
/// deletes the durable credential file (after checking that the binding
/// holds a usable credential to replace it).
pub(super) async fn scrub(
    live: &Live,
    name: &str,
    dir: &Path,
    binding: Option<&HttpVersionedCredentialBinding>,
) -> Result<(), BindingError> {
    let legacy = legacy_auth_file(dir);
    let legacy_present = tokio::fs::try_exists(&legacy).await.unwrap_or(false);
    if legacy_present && let Some(b) = binding {
        let resolved = b.load().await?;
        if !is_valid_credential(name, &resolved.value) {
            return Err(CredentialError::NeedsReauthentication(
                "ChatGPT authentication is invalid. Please sign in again.".into(),
            )
            .into());
        }
    }
    {
        let mut meta = live.shared.meta.lock();
        meta.secrets.remove(name);
        if !required_names(&meta.required_runtime_credential_bindings)
            .iter()
            .any(|n| n == name)
        {
            meta.required_runtime_credential_bindings
                .push(Value::String(name.to_string()));
        }
    }
    live.save_meta().await?;
    if legacy_present {
        match tokio::fs::remove_file(&legacy).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(ServiceError::Internal(format!(
                    "cannot remove the durable credential copy: {e}"
                ))
                .into());
            }
        }
    }
    Ok(())
}
