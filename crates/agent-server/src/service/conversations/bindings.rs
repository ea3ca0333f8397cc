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
//!
//! A Codex `ACPAgent` conversation (`acp_server: "codex"`) no product bound
//! `CODEX_AUTH_JSON` to, on a server whose secrets store holds one, is
//! bound to the store instead ([`LocalVersionedCredentialBinding`], found
//! again each time the conversation loads): scrubbed the same way, but not
//! required after a restart.

use super::error::ServiceError;
use super::live::Live;
use crate::service::secrets_binding::LocalVersionedCredentialBinding;
use crate::service::secrets_store::SecretsStore;
use openhands_sdk::credential::http::HttpVersionedCredentialBinding;
use openhands_sdk::credential::{
    ActivationError, CODEX_AUTH_SECRET_NAME, CredentialError, VersionedCredentialBinding,
    is_valid_credential,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One credential binding of a conversation.
#[derive(Debug, Clone)]
pub(super) enum BoundBinding {
    /// Activated by the product (`PUT …/credential-bindings/{name}`):
    /// required again after a restart.
    Http(Arc<HttpVersionedCredentialBinding>),
    /// The server's own secrets store (the Codex fallback).
    Local(Arc<LocalVersionedCredentialBinding>),
}

impl BoundBinding {
    /// The binding behind the conversation's credential file.
    pub(super) fn as_dyn(&self) -> Arc<dyn VersionedCredentialBinding> {
        match self {
            Self::Http(b) => b.clone(),
            Self::Local(b) => b.clone(),
        }
    }

    /// Whether a restarted conversation must wait for it to be activated
    /// again (only a product's binding is).
    pub(super) fn required(&self) -> bool {
        matches!(self, Self::Http(_))
    }
}

/// The bindings of one conversation, by secret name.
pub(super) type Bound = BTreeMap<String, BoundBinding>;

/// Whether an `ACPAgent` spec runs Codex (`acp_server: "codex"`, as the
/// reference decides it: not guessed from the command).
pub(super) fn is_codex_agent(spec: &openhands_wire::agent::AgentSpec) -> bool {
    spec.kind == "ACPAgent" && spec.extra.get("acp_server").and_then(Value::as_str) == Some("codex")
}

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

/// The store's binding of the Codex credential for `live`, when the
/// reference would bind it: a Codex `ACPAgent` whose launched profile may
/// use `CODEX_AUTH_JSON`, no product binding of it in `bound`, and a value
/// in `store` (an unreadable store counts as none).
pub(super) async fn local_fallback(
    store: Option<&SecretsStore>,
    live: &Live,
    bound: &Bound,
) -> Option<BoundBinding> {
    let store = store?.clone();
    if bound.contains_key(CODEX_AUTH_SECRET_NAME)
        || !is_codex_agent(live.conv.agent().spec())
        || !profile_allows_secret(&live.meta().launched_agent_profile, CODEX_AUTH_SECRET_NAME)
    {
        return None;
    }
    let reader = store.clone();
    let present = tokio::task::spawn_blocking(move || reader.get(CODEX_AUTH_SECRET_NAME))
        .await
        .ok()?
        .ok()?
        .is_some();
    present.then(|| {
        BoundBinding::Local(Arc::new(LocalVersionedCredentialBinding::new(
            store,
            CODEX_AUTH_SECRET_NAME,
        )))
    })
}

/// Activates `bound` on the freshly loaded `live` (an `ACPAgent`) and
/// scrubs the conversation's copies; returns the bindings now active. The
/// store's binding is left out of a sandboxed conversation (whose ACP
/// server cannot reach a credential file outside its workspace): it keeps
/// its own copy of the secret.
pub(super) async fn apply(live: &Live, bound: Bound, dir: &Path) -> Result<Bound, BindingError> {
    let mut active = Bound::new();
    for (name, binding) in bound {
        match live
            .conv
            .activate_credential_binding(&name, binding.as_dyn())
            .await
        {
            Ok(()) => {}
            Err(ActivationError::Sandboxed) if !binding.required() => {
                tracing::info!(credential = %name, "sandboxed conversation: the secrets store's credential is not bound");
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        scrub(live, &name, dir, &binding).await?;
        active.insert(name, binding);
    }
    Ok(active)
}

/// Removes the secret `name` from `meta.json`, records it as required (a
/// product's binding) and deletes the durable credential file (after
/// checking that the binding holds a usable credential to replace it).
pub(super) async fn scrub(
    live: &Live,
    name: &str,
    dir: &Path,
    binding: &BoundBinding,
) -> Result<(), BindingError> {
    let legacy = legacy_auth_file(dir);
    let legacy_present = tokio::fs::try_exists(&legacy).await.unwrap_or(false);
    if legacy_present {
        let resolved = binding.as_dyn().load().await?;
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
        if binding.required()
            && !required_names(&meta.required_runtime_credential_bindings)
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
