//! Credential bindings of an `ACPAgent` conversation (the reference's
//! `activate_file_credential_binding` and file credential lifecycle): a
//! binding activated before the ACP server first starts replaces the
//! conversation's copy of the secret (removed from the secrets, from
//! `agent_context.secrets` and from the conversation's durable credential
//! file); at start its value is written to a private file the server
//! reads, and rotations of that file are written back after each turn,
//! each `ask_agent` fork and at close.

use super::super::core::{agent_json, state_update};
use super::super::error::ConversationError;
use super::super::local::LocalConversation;
use crate::credential::file::FileCredential;
use crate::credential::{
    ActivationError, CredentialError, VersionedCredentialBinding, supports_file_credential_binding,
};
use openhands_acp::{AcpAgentConfig, AcpError};
use openhands_wire::event::{ConversationErrorEvent, Event, EventBody, SourceType};
use openhands_workspace::exec::ChildEnv;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The ACP error a credential failure is reported as: a sign-in problem is
/// `ACPAuthRequired`, anything else a synchronization failure.
pub(crate) fn acp_error(e: &CredentialError) -> AcpError {
    match e {
        CredentialError::NeedsReauthentication(m) => AcpError::Auth(m.clone()),
        other => AcpError::CredentialSync(other.to_string()),
    }
}

impl LocalConversation {
    /// Binds the file credential `secret_name` (only `CODEX_AUTH_JSON`) of
    /// this `ACPAgent` conversation to `binding`, before its ACP server
    /// first starts (a sandboxed conversation is refused). The conversation's own copy of the secret is removed
    /// (secrets, `agent_context.secrets`, recorded in the state).
    pub async fn activate_credential_binding(
        &self,
        secret_name: &str,
        binding: Arc<dyn VersionedCredentialBinding>,
    ) -> Result<(), ActivationError> {
        if !supports_file_credential_binding(secret_name) {
            return Err(ActivationError::Unsupported(secret_name.to_string()));
        }
        let _starting = self.inner.acp.starting().await;
        if !self.is_acp() || self.is_closed() || self.inner.acp.initialized() {
            return Err(ActivationError::TooLate);
        }
        if self.inner.env.exec.sandbox.is_some() {
            return Err(ActivationError::Sandboxed);
        }
        self.inner.acp.bind(secret_name, binding);
        self.forget_secret(secret_name)
            .await
            .map_err(|e| ActivationError::Failed(e.to_string()))
    }

    /// Names of the credentials bound to this conversation.
    pub fn credential_bindings(&self) -> Vec<String> {
        self.inner.acp.bindings().into_keys().collect()
    }

    /// Removes `name` from the secrets and from `agent_context.secrets`
    /// (each recorded when it was there).
    async fn forget_secret(&self, name: &str) -> Result<(), ConversationError> {
        let agent = self.inner.agent.agent();
        let context = agent.spec().agent_context.clone();
        let trimmed = match context {
            Some(Value::Object(mut ctx)) => {
                let removed = ctx
                    .get_mut("secrets")
                    .and_then(Value::as_object_mut)
                    .and_then(|secrets| secrets.remove(name))
                    .is_some();
                removed.then_some(Value::Object(ctx))
            }
            _ => None,
        };
        if let Some(ctx) = trimmed {
            let new_agent = agent.with_agent_context(Some(ctx));
            let spec = new_agent.spec().clone();
            self.inner.agent.swap(new_agent);
            let value = agent_json(&spec, None).unwrap_or(Value::Null);
            self.commit_async(true, move |c| {
                c.set_agent_spec(spec);
                vec![state_update("agent", value)]
            })
            .await?;
        }
        let name = name.to_string();
        self.commit_async(true, move |c| {
            if c.secrets().remove(&name) {
                vec![state_update("secret_registry", c.secrets().to_json(None))]
            } else {
                Vec::new()
            }
        })
        .await?;
        Ok(())
    }

    /// Writes the bound credential files of the specs `config` applies and
    /// points their variables at them; the durable copies under `root` are
    /// removed. A file kept from a server that died is synced and reused.
    pub(crate) async fn materialize_bound_credentials(
        &self,
        config: &AcpAgentConfig,
        root: &Path,
        env: &mut ChildEnv,
    ) -> Result<(), CredentialError> {
        let bindings = self.inner.acp.bindings();
        if bindings.is_empty() {
            return Ok(());
        }
        let mut files = self.inner.acp.files().lock().await;
        for spec in openhands_acp::files::active_file_secrets(config) {
            let Some(binding) = bindings.get(&spec.secret_name) else {
                continue;
            };
            let existing = files
                .iter()
                .position(|f| f.secret_name() == spec.secret_name);
            let index = match existing {
                Some(i) => {
                    files[i].flush().await?;
                    i
                }
                None => {
                    let file = FileCredential::materialize(
                        &spec.secret_name,
                        &spec.filename,
                        binding.clone(),
                        &self.secrets(),
                    )
                    .await?;
                    let durable = root.join(&spec.subdir).join(&spec.filename);
                    match tokio::fs::remove_file(&durable).await {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(_) => {
                            file.discard().await;
                            return Err(CredentialError::Unavailable(
                                "Durable credential copy could not be removed.".into(),
                            ));
                        }
                    }
                    files.push(file);
                    files.len() - 1
                }
            };
            let file = &files[index];
            let location = if spec.env_points_to_dir {
                file.dir()
            } else {
                file.path()
            };
            env.set(&spec.env_var, location.to_string_lossy())
                .map_err(|e| {
                    CredentialError::Unavailable(format!("ACP server environment: {e}"))
                })?;
        }
        Ok(())
    }

    /// Masks the values the ACP server has just rotated its bound
    /// credential files to, before output is masked and recorded.
    pub(crate) async fn track_bound_credentials(&self) {
        let files = self.inner.acp.files().lock().await;
        for f in files.iter() {
            f.track_current().await;
        }
    }

    /// Writes rotations of the bound credential files back; the first
    /// failure is returned after every file was tried.
    pub(crate) async fn flush_bound_credentials(&self) -> Result<(), CredentialError> {
        let files = self.inner.acp.files().lock().await;
        let mut first = None;
        for f in files.iter() {
            if let Err(e) = f.flush().await {
                tracing::warn!(credential = %f.secret_name(), error = %e, "ACP file credential not synced");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// The final sync of the bound credential files, whose directories are
    /// then removed.
    pub(crate) async fn release_bound_credentials(&self) -> Result<(), CredentialError> {
        let files: Vec<FileCredential> = std::mem::take(&mut *self.inner.acp.files().lock().await);
        let mut first = None;
        for f in files {
            if let Err(e) = f.close().await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The `ConversationErrorEvent` of a failed sync after a turn, as the
/// reference reports it (`ACPAuthRequired` for a sign-in problem, else
/// `ACPPromptError`).
pub(crate) fn sync_error_event(e: &CredentialError) -> Event {
    let err = acp_error(e);
    Event::with_source(
        SourceType::Agent,
        EventBody::ConversationError(ConversationErrorEvent {
            code: err.turn_code().to_string(),
            detail: err.detail(),
            classification: None,
        }),
    )
}
