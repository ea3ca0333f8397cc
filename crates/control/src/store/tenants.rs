//! Tenants, their users, and the users' credentials (customer access
//! tokens and workspace API keys, stored as hashes).

use super::{Store, StoreResult, now_ms};
use uuid::Uuid;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Tenant {
    /// Id (UUID).
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Most tasks that may run at once in the tenant's sandboxes.
    pub max_running_tasks: i64,
    /// Tasks running now.
    pub running_tasks: i64,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// A user of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct User {
    /// Id (UUID).
    pub id: String,
    /// The tenant.
    pub tenant_id: String,
    /// Name, unique in the tenant.
    pub name: String,
    /// Permissions, comma-separated grant names.
    pub permissions: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// Kind of a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// A customer access token: the user's permissions.
    Token,
    /// A workspace API key: its grants within the user's permissions.
    Key,
}

impl CredentialKind {
    /// `token` or `key`.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialKind::Token => "token",
            CredentialKind::Key => "key",
        }
    }
}

/// A stored credential.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Credential {
    /// Id (UUID).
    pub id: String,
    /// `token` or `key`.
    pub kind: String,
    /// The tenant.
    pub tenant_id: String,
    /// The user acting.
    pub user_id: String,
    /// SHA-256 of the secret (hex).
    pub secret_hash: String,
    /// Key grants (comma-separated; empty for tokens).
    pub grants: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Expiry (Unix ms), if any.
    pub expires_at: Option<i64>,
    /// Revocation time (Unix ms), if revoked.
    pub revoked_at: Option<i64>,
}

impl Credential {
    /// Whether the credential may be used at `now` (Unix ms).
    pub fn is_usable(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

impl Store {
    /// Creates a tenant.
    pub async fn create_tenant(&self, name: &str, max_running_tasks: i64) -> StoreResult<Tenant> {
        let t = Tenant {
            id: Uuid::new_v4().to_string(),
            name: name.to_string(),
            max_running_tasks,
            running_tasks: 0,
            created_at: now_ms(),
        };
        sqlx::query(
            "INSERT INTO tenants (id, name, max_running_tasks, running_tasks, created_at) \
             VALUES ($1, $2, $3, 0, $4)",
        )
        .bind(&t.id)
        .bind(&t.name)
        .bind(t.max_running_tasks)
        .bind(t.created_at)
        .execute(self.pool())
        .await?;
        Ok(t)
    }

    /// The tenant with id `id`.
    pub async fn tenant(&self, id: &str) -> StoreResult<Option<Tenant>> {
        Ok(sqlx::query_as("SELECT * FROM tenants WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The tenant with id or name `key`.
    pub async fn find_tenant(&self, key: &str) -> StoreResult<Option<Tenant>> {
        Ok(
            sqlx::query_as("SELECT * FROM tenants WHERE id = $1 OR name = $1 ORDER BY created_at")
                .bind(key)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// Changes a tenant's running-task limit.
    pub async fn set_tenant_limit(&self, id: &str, max_running_tasks: i64) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE tenants SET max_running_tasks = $2 WHERE id = $1")
            .bind(id)
            .bind(max_running_tasks)
            .execute(self.pool())
            .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Creates a user.
    pub async fn create_user(
        &self,
        tenant_id: &str,
        name: &str,
        permissions: &str,
    ) -> StoreResult<User> {
        let u = User {
            id: Uuid::new_v4().to_string(),
            tenant_id: tenant_id.to_string(),
            name: name.to_string(),
            permissions: permissions.to_string(),
            created_at: now_ms(),
        };
        sqlx::query(
            "INSERT INTO users (id, tenant_id, name, permissions, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&u.id)
        .bind(&u.tenant_id)
        .bind(&u.name)
        .bind(&u.permissions)
        .bind(u.created_at)
        .execute(self.pool())
        .await?;
        Ok(u)
    }

    /// The user with id or name `key` in `tenant_id`.
    pub async fn find_user(&self, tenant_id: &str, key: &str) -> StoreResult<Option<User>> {
        Ok(
            sqlx::query_as("SELECT * FROM users WHERE tenant_id = $1 AND (id = $2 OR name = $2)")
                .bind(tenant_id)
                .bind(key)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// The user with id `id`.
    pub async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        Ok(sqlx::query_as("SELECT * FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Replaces a user's permissions.
    pub async fn set_permissions(&self, user_id: &str, permissions: &str) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE users SET permissions = $2 WHERE id = $1")
            .bind(user_id)
            .bind(permissions)
            .execute(self.pool())
            .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Stores a credential's hash; returns its id.
    pub async fn create_credential(
        &self,
        kind: CredentialKind,
        user: &User,
        secret_hash: &str,
        grants: &str,
        expires_at: Option<i64>,
    ) -> StoreResult<String> {
        let id = Uuid::new_v4().to_string();
        sqlx::query(
            "INSERT INTO credentials \
             (id, kind, tenant_id, user_id, secret_hash, grants, created_at, expires_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)",
        )
        .bind(&id)
        .bind(kind.as_str())
        .bind(&user.tenant_id)
        .bind(&user.id)
        .bind(secret_hash)
        .bind(grants)
        .bind(now_ms())
        .bind(expires_at)
        .execute(self.pool())
        .await?;
        Ok(id)
    }

    /// The credential with this secret hash and its user.
    pub async fn credential_by_hash(&self, hash: &str) -> StoreResult<Option<(Credential, User)>> {
        let cred: Option<Credential> =
            sqlx::query_as("SELECT * FROM credentials WHERE secret_hash = $1")
                .bind(hash)
                .fetch_optional(self.pool())
                .await?;
        let Some(cred) = cred else { return Ok(None) };
        let Some(user) = self.user(&cred.user_id).await? else {
            return Ok(None);
        };
        Ok(Some((cred, user)))
    }

    /// Revokes a credential (by id); false when there is none.
    pub async fn revoke_credential(&self, id: &str) -> StoreResult<bool> {
        let r = sqlx::query(
            "UPDATE credentials SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
        )
        .bind(id)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(r.rows_affected() == 1)
    }
}
