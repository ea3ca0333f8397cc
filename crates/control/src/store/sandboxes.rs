//! Sandboxes: one agent server (or one working directory on a registered
//! host) per sandbox, with its current task.

use super::{Store, StoreResult, now_ms};

/// Sandbox statuses.
pub mod status {
    /// Being provisioned.
    pub const STARTING: &str = "starting";
    /// Its agent server answers; tasks may start.
    pub const READY: &str = "ready";
    /// Provisioning failed or its local process died.
    pub const FAILED: &str = "failed";
    /// Delete requested; the owning instance releases it.
    pub const DELETING: &str = "deleting";
    /// Gone (kept for the record, never listed).
    pub const DELETED: &str = "deleted";
}

/// A sandbox row.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Sandbox {
    /// Id (UUID).
    pub id: String,
    /// The tenant.
    pub tenant_id: String,
    /// Display name.
    pub name: String,
    /// `local`, `docker` or `host`.
    pub placement: String,
    /// The registered host (placement `host`).
    pub host_id: Option<String>,
    /// The instance that provisioned it (and owns its local process).
    pub owner_instance: String,
    /// Base URL of its agent server.
    pub url: Option<String>,
    /// Session key of its agent server, sealed.
    pub sealed_key: Option<String>,
    /// The agent's working directory (on the host).
    pub working_dir: String,
    /// The sandbox's own LLM JSON, sealed (else the control plane's).
    pub sealed_llm: Option<String>,
    /// The model of its own LLM (for display).
    pub llm_model: Option<String>,
    /// See [`status`].
    pub status: String,
    /// The current (latest) task.
    pub current_task_id: Option<String>,
    /// 1 while the current task runs.
    pub task_busy: i64,
    /// The user who created it.
    pub created_by: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Deletion time (Unix ms).
    pub deleted_at: Option<i64>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("placement", &self.placement)
            .field("url", &self.url)
            .field("status", &self.status)
            .field("current_task_id", &self.current_task_id)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Inserts a new sandbox row.
    pub async fn insert_sandbox(&self, s: &Sandbox) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO sandboxes (id, tenant_id, name, placement, host_id, owner_instance, url, \
             sealed_key, working_dir, sealed_llm, llm_model, status, current_task_id, task_busy, \
             created_by, created_at, deleted_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, 0, $13, $14, NULL)",
        )
        .bind(&s.id)
        .bind(&s.tenant_id)
        .bind(&s.name)
        .bind(&s.placement)
        .bind(&s.host_id)
        .bind(&s.owner_instance)
        .bind(&s.url)
        .bind(&s.sealed_key)
        .bind(&s.working_dir)
        .bind(&s.sealed_llm)
        .bind(&s.llm_model)
        .bind(&s.status)
        .bind(&s.created_by)
        .bind(s.created_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Records where a sandbox's agent server answers and its status.
    pub async fn set_sandbox_endpoint(
        &self,
        id: &str,
        url: &str,
        sealed_key: &str,
        status: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE sandboxes SET url = $2, sealed_key = $3, status = $4 \
             WHERE id = $1 AND status NOT IN ('deleting', 'deleted')",
        )
        .bind(id)
        .bind(url)
        .bind(sealed_key)
        .bind(status)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Sets a live sandbox's status (not once deletion started).
    pub async fn set_sandbox_status(&self, id: &str, status: &str) -> StoreResult<()> {
        sqlx::query(
            "UPDATE sandboxes SET status = $2 WHERE id = $1 AND status NOT IN ('deleting', 'deleted')",
        )
        .bind(id)
        .bind(status)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Marks a sandbox as being deleted; false when it is already gone.
    pub async fn mark_sandbox_deleting(&self, id: &str) -> StoreResult<bool> {
        let r = sqlx::query(
            "UPDATE sandboxes SET status = 'deleting' WHERE id = $1 AND status <> 'deleted'",
        )
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Marks a sandbox deleted.
    pub async fn mark_sandbox_deleted(&self, id: &str) -> StoreResult<()> {
        sqlx::query("UPDATE sandboxes SET status = 'deleted', deleted_at = $2 WHERE id = $1")
            .bind(id)
            .bind(now_ms())
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// A tenant's sandbox (not deleted).
    pub async fn sandbox(&self, tenant_id: &str, id: &str) -> StoreResult<Option<Sandbox>> {
        Ok(sqlx::query_as(
            "SELECT * FROM sandboxes WHERE tenant_id = $1 AND id = $2 AND status <> 'deleted'",
        )
        .bind(tenant_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// A sandbox by id, whatever its tenant or status.
    pub async fn sandbox_by_id(&self, id: &str) -> StoreResult<Option<Sandbox>> {
        Ok(sqlx::query_as("SELECT * FROM sandboxes WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// A tenant's sandboxes (not deleted), oldest first.
    pub async fn sandboxes(&self, tenant_id: &str) -> StoreResult<Vec<Sandbox>> {
        Ok(sqlx::query_as(
            "SELECT * FROM sandboxes WHERE tenant_id = $1 AND status <> 'deleted' \
             ORDER BY created_at, id",
        )
        .bind(tenant_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Whether tenants other than `tenant_id` have local sandboxes (not
    /// deleted) on `instance`.
    pub async fn others_have_local_sandboxes(
        &self,
        instance: &str,
        tenant_id: &str,
    ) -> StoreResult<bool> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sandboxes WHERE owner_instance = $1 AND placement = 'local' \
             AND tenant_id <> $2 AND status <> 'deleted'",
        )
        .bind(instance)
        .bind(tenant_id)
        .fetch_one(self.pool())
        .await?;
        Ok(n > 0)
    }

    /// Sandboxes provisioned by `instance` with placement `local` or
    /// `docker` that are not deleted.
    pub async fn owned_sandboxes(&self, instance: &str) -> StoreResult<Vec<Sandbox>> {
        Ok(sqlx::query_as(
            "SELECT * FROM sandboxes WHERE owner_instance = $1 AND placement IN ('local', 'docker') \
             AND status <> 'deleted' ORDER BY created_at",
        )
        .bind(instance)
        .fetch_all(self.pool())
        .await?)
    }
}
