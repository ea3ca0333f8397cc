//! Administration: tenants, users, credentials and hosts (what the
//! `openhands control tenant|user|token|key|host` commands do).

use crate::agent_client::{AgentClient, Endpoint};
use crate::grants::GrantSet;
use crate::secrets::{KEY_PREFIX, Sealer, TOKEN_PREFIX, hash_credential, new_credential};
use crate::store::hosts::{Host, HostLoad};
use crate::store::tenants::{CredentialKind, Tenant, User};
use crate::store::{Store, StoreError};
use std::time::Duration;

/// Why an administrative action failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The request is invalid.
    #[error("{0}")]
    Invalid(String),
    /// A named tenant, user or credential does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A host did not answer or refused the key.
    #[error("{0}")]
    Host(String),
    /// No randomness.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
}

/// Administrative access to the control plane's database.
#[derive(Debug, Clone)]
pub struct Admin {
    store: Store,
    sealer: Sealer,
}

fn check_name(what: &str, name: &str) -> Result<(), AdminError> {
    let ok = !name.trim().is_empty()
        && name.chars().count() <= 200
        && !name.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(AdminError::Invalid(format!(
            "{what} names are 1 to 200 printable characters"
        )))
    }
}

impl Admin {
    /// Admin over `store`, sealing with `sealer`.
    pub fn new(store: Store, sealer: Sealer) -> Self {
        Self { store, sealer }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Creates a tenant.
    pub async fn create_tenant(
        &self,
        name: &str,
        max_running_tasks: i64,
    ) -> Result<Tenant, AdminError> {
        check_name("tenant", name)?;
        if max_running_tasks < 1 {
            return Err(AdminError::Invalid(
                "--max-running-tasks must be at least 1".into(),
            ));
        }
        if self.store.find_tenant(name).await?.is_some() {
            return Err(AdminError::Invalid(format!(
                "a tenant named {name:?} exists"
            )));
        }
        Ok(self.store.create_tenant(name, max_running_tasks).await?)
    }

    /// The tenant with id or name `key`.
    pub async fn tenant(&self, key: &str) -> Result<Tenant, AdminError> {
        self.store
            .find_tenant(key)
            .await?
            .ok_or_else(|| AdminError::NotFound(format!("no tenant {key:?}")))
    }

    /// Changes a tenant's running-task limit.
    pub async fn set_tenant_limit(
        &self,
        tenant: &str,
        max_running_tasks: i64,
    ) -> Result<Tenant, AdminError> {
        if max_running_tasks < 1 {
            return Err(AdminError::Invalid("the limit must be at least 1".into()));
        }
        let t = self.tenant(tenant).await?;
        self.store
            .set_tenant_limit(&t.id, max_running_tasks)
            .await?;
        self.tenant(&t.id).await
    }

    /// Creates a user with `permissions` (comma-separated grants).
    pub async fn create_user(
        &self,
        tenant: &str,
        name: &str,
        permissions: &str,
    ) -> Result<User, AdminError> {
        check_name("user", name)?;
        let t = self.tenant(tenant).await?;
        let perms = GrantSet::parse(permissions).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if self.store.find_user(&t.id, name).await?.is_some() {
            return Err(AdminError::Invalid(format!(
                "tenant {} has a user named {name:?}",
                t.name
            )));
        }
        Ok(self
            .store
            .create_user(&t.id, name, &perms.to_string())
            .await?)
    }

    /// The user with id or name `key` in `tenant`.
    pub async fn user(&self, tenant: &str, key: &str) -> Result<User, AdminError> {
        let t = self.tenant(tenant).await?;
        self.store
            .find_user(&t.id, key)
            .await?
            .ok_or_else(|| AdminError::NotFound(format!("tenant {} has no user {key:?}", t.name)))
    }

    /// Replaces a user's permissions (their keys narrow at once).
    pub async fn set_permissions(
        &self,
        tenant: &str,
        user: &str,
        permissions: &str,
    ) -> Result<User, AdminError> {
        let u = self.user(tenant, user).await?;
        let perms = GrantSet::parse(permissions).map_err(|e| AdminError::Invalid(e.to_string()))?;
        self.store
            .set_permissions(&u.id, &perms.to_string())
            .await?;
        self.user(tenant, &u.id).await
    }

    /// Creates a customer access token for a user; returns the secret
    /// (shown once; only its hash is stored).
    pub async fn create_token(
        &self,
        tenant: &str,
        user: &str,
        ttl: Option<Duration>,
    ) -> Result<String, AdminError> {
        let u = self.user(tenant, user).await?;
        let secret = new_credential(TOKEN_PREFIX)?;
        let expires = ttl
            .map(|d| crate::store::now_ms() + i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2));
        self.store
            .create_credential(
                CredentialKind::Token,
                &u,
                &hash_credential(&secret),
                "",
                expires,
            )
            .await?;
        Ok(secret)
    }

    /// Creates a workspace API key with `grants` for a user; returns the
    /// secret (shown once; only its hash is stored).
    pub async fn create_key(
        &self,
        tenant: &str,
        user: &str,
        grants: &str,
    ) -> Result<String, AdminError> {
        let u = self.user(tenant, user).await?;
        let g = GrantSet::parse(grants).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if g.is_empty() {
            return Err(AdminError::Invalid(
                "a key needs at least one grant (--grants)".into(),
            ));
        }
        let secret = new_credential(KEY_PREFIX)?;
        self.store
            .create_credential(
                CredentialKind::Key,
                &u,
                &hash_credential(&secret),
                &g.to_string(),
                None,
            )
            .await?;
        Ok(secret)
    }

    /// Revokes a token or key given its secret.
    pub async fn revoke(&self, secret: &str) -> Result<(), AdminError> {
        let (cred, _) = self
            .store
            .credential_by_hash(&hash_credential(secret))
            .await?
            .ok_or_else(|| AdminError::NotFound("no such token or key".into()))?;
        self.store.revoke_credential(&cred.id).await?;
        Ok(())
    }

    /// Registers a remote agent server after checking it accepts `key`.
    pub async fn add_host(
        &self,
        url: &str,
        key: &str,
        workspace_root: &str,
        timeout: Duration,
    ) -> Result<Host, AdminError> {
        let parsed = url::Url::parse(url)
            .map_err(|e| AdminError::Invalid(format!("invalid host URL {url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(AdminError::Invalid(
                "the host URL must be http:// or https://".into(),
            ));
        }
        if key.is_empty() {
            return Err(AdminError::Invalid("--key must not be empty".into()));
        }
        if workspace_root.trim().is_empty() {
            return Err(AdminError::Invalid(
                "--workspace-root must not be empty".into(),
            ));
        }
        let url = url.trim_end_matches('/').to_string();
        let ep = Endpoint {
            url: url.clone(),
            key: key.to_string(),
        };
        AgentClient::new(timeout)
            .check(&ep)
            .await
            .map_err(|e| AdminError::Host(format!("the host {url} cannot be used: {e}")))?;
        Ok(self
            .store
            .upsert_host(&url, &self.sealer.seal(key), workspace_root)
            .await?)
    }

    /// Every host with its number of sandboxes.
    pub async fn hosts(&self) -> Result<Vec<HostLoad>, AdminError> {
        Ok(self.store.host_loads().await?)
    }

    /// Stops placing sandboxes on a host (by id or URL).
    pub async fn remove_host(&self, key: &str) -> Result<(), AdminError> {
        let key = key.trim_end_matches('/');
        if self.store.disable_host(key).await? {
            Ok(())
        } else {
            Err(AdminError::NotFound(format!("no host {key:?}")))
        }
    }
}
