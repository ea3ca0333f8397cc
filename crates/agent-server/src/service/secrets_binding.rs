//! The server's own secrets store as a versioned credential binding (the
//! reference's `LocalVersionedCredentialBinding`): the fallback a Codex
//! `ACPAgent` conversation is bound to when no product bound its
//! `CODEX_AUTH_JSON` and the user saved one under `/api/settings/secrets`.
//! Reads give the secret's value and generation; write-backs replace it
//! only while the generation is the one read (another conversation or a
//! settings change in between is a conflict). Store I/O runs off the
//! runtime.

use crate::service::secrets_store::{SecretsStore, VersionedError};
use async_trait::async_trait;
use openhands_sdk::credential::{CredentialError, ResolvedCredential, VersionedCredentialBinding};

/// A credential kept in this server's `secrets.json`.
#[derive(Debug, Clone)]
pub struct LocalVersionedCredentialBinding {
    store: SecretsStore,
    secret_name: String,
}

impl LocalVersionedCredentialBinding {
    /// The secret `secret_name` of `store`.
    pub fn new(store: SecretsStore, secret_name: impl Into<String>) -> Self {
        Self {
            store,
            secret_name: secret_name.into(),
        }
    }

    /// The secret's name.
    pub fn secret_name(&self) -> &str {
        &self.secret_name
    }

    async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&SecretsStore, &str) -> Result<R, VersionedError> + Send + 'static,
        unavailable: &str,
    ) -> Result<R, CredentialError> {
        let store = self.store.clone();
        let name = self.secret_name.clone();
        let result = tokio::task::spawn_blocking(move || f(&store, &name))
            .await
            .map_err(|_| CredentialError::Unavailable(unavailable.to_string()))?;
        result.map_err(|e| match e {
            VersionedError::Missing(_) => CredentialError::NeedsReauthentication(
                "Credential is missing. Please authenticate again.".into(),
            ),
            VersionedError::Conflict => CredentialError::Conflict(
                "The canonical credential changed in another runtime.".into(),
            ),
            VersionedError::Store(e) => {
                tracing::warn!(error = %e, "local credential store");
                CredentialError::Unavailable(unavailable.to_string())
            }
        })
    }
}

#[async_trait]
impl VersionedCredentialBinding for LocalVersionedCredentialBinding {
    async fn load(&self) -> Result<ResolvedCredential, CredentialError> {
        let (value, version) = self
            .run(
                |store, name| store.load_versioned(name),
                "Local credential store is unavailable.",
            )
            .await?;
        Ok(ResolvedCredential { value, version })
    }

    async fn replace(
        &self,
        expected_version: &str,
        value: &str,
    ) -> Result<String, CredentialError> {
        let expected = expected_version.to_string();
        let value = value.to_string();
        self.run(
            move |store, name| store.replace_versioned(name, &expected, &value),
            "Local credential update failed.",
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_and_write_backs_map_to_the_references_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretsStore::new(dir.path(), None);
        let binding = LocalVersionedCredentialBinding::new(store.clone(), "CODEX_AUTH_JSON");
        assert!(matches!(
            binding.load().await,
            Err(CredentialError::NeedsReauthentication(_))
        ));
        store.set("CODEX_AUTH_JSON", "one", None).unwrap();
        let first = binding.load().await.unwrap();
        assert_eq!(first.value, "one");
        let next = binding.replace(&first.version, "two").await.unwrap();
        assert_eq!(
            store.get("CODEX_AUTH_JSON").unwrap().as_deref(),
            Some("two")
        );
        assert!(matches!(
            binding.replace(&first.version, "three").await,
            Err(CredentialError::Conflict(_))
        ));
        assert_eq!(binding.load().await.unwrap().version, next);
        std::fs::write(store.path(), "not json").unwrap();
        assert_eq!(
            binding.load().await,
            Err(CredentialError::Unavailable(
                "Local credential store is unavailable.".into()
            ))
        );
    }
}
