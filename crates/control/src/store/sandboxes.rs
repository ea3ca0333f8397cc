//! Sandboxes: one agent server (or one working directory on a registered
//! host) per sandbox, with its current task.

use super::{Store, StoreResult, now_ms};

/// Sandbox statuses.
pub mod status {
    /// Being provisioned.
    pub const STARTING: &str = "starting";
    /// Its agent server answers; tasks may start.
    pub const READY: &str = "ready";
    /// Frozen by a Runtime API `pause`: its processes are stopped, its
    /// files kept, its endpoint unchanged; `resume` makes it ready again.
    pub const PAUSED: &str = "paused";
    /// Provisioning failed.
    pub const FAILED: &str = "failed";
    /// Its engine reports it gone (`status_reason` says why); the next
    /// start of its owning instance provisions it again.
    pub const LOST: &str = "lost";
    /// Delete requested; the owning instance releases it.
    pub const DELETING: &str = "deleting";
    /// Gone (kept for the record, never listed).
    pub const DELETED: &str = "deleted";
}

/// Where a provisioned sandbox runs (see [`Store::set_sandbox_placed`]).
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    /// The engine's id for it.
    pub engine_id: &'a str,
    /// Base URL of its agent server.
    pub url: &'a str,
    /// Its session key, sealed.
    pub sealed_key: &'a str,
    /// The agent's working directory.
    pub working_dir: &'a str,
    /// Its registered host (engine `host`).
    pub host_id: Option<&'a str>,
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
    /// The engine running it (see [`crate::engines`]; older rows: `None`,
    /// the placement names it).
    pub engine: Option<String>,
    /// The engine's own id for it (process group, container id, host id).
    pub engine_id: Option<String>,
    /// Why it is `lost` or `failed`.
    pub status_reason: Option<String>,
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
    /// The Runtime API session id of a runtime (`None` for a sandbox made
    /// through the spec-003 API).
    pub runtime_session: Option<String>,
    /// What a runtime's start asked of its engine
    /// ([`crate::engines::RuntimeSpec`] as JSON), sealed.
    pub sealed_runtime: Option<String>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("placement", &self.placement)
            .field("engine_id", &self.engine_id)
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
             created_by, created_at, deleted_at, engine, engine_id, runtime_session, \
             sealed_runtime) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, 0, $13, $14, NULL, \
             $15, $16, $17, $18)",
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
        .bind(&s.engine)
        .bind(&s.engine_id)
        .bind(&s.runtime_session)
        .bind(&s.sealed_runtime)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Records where a provisioned sandbox runs (the engine's id, its
    /// agent server's URL and sealed key, the agent's working directory,
    /// its registered host) and makes it ready.
    pub async fn set_sandbox_placed(&self, id: &str, placed: &Placed<'_>) -> StoreResult<()> {
        sqlx::query(
            "UPDATE sandboxes SET engine_id = $2, url = $3, sealed_key = $4, working_dir = $5, \
             host_id = $6, status = 'ready', status_reason = NULL \
             WHERE id = $1 AND status NOT IN ('deleting', 'deleted')",
        )
        .bind(id)
        .bind(placed.engine_id)
        .bind(placed.url)
        .bind(placed.sealed_key)
        .bind(placed.working_dir)
        .bind(placed.host_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Records where a re-adopted sandbox answers now (ready again).
    pub async fn set_sandbox_located(
        &self,
        id: &str,
        engine_id: &str,
        url: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE sandboxes SET engine_id = $2, url = $3, status = 'ready', status_reason = NULL \
             WHERE id = $1 AND status NOT IN ('deleting', 'deleted')",
        )
        .bind(id)
        .bind(engine_id)
        .bind(url)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Sets a live sandbox's status with the reason (`lost`, `failed`);
    /// false when it is being deleted or already has that status.
    pub async fn set_sandbox_down(
        &self,
        id: &str,
        status: &str,
        reason: &str,
    ) -> StoreResult<bool> {
        let r = sqlx::query(
            "UPDATE sandboxes SET status = $2, status_reason = $3 \
             WHERE id = $1 AND status NOT IN ('deleting', 'deleted') AND status <> $2",
        )
        .bind(id)
        .bind(status)
        .bind(reason)
        .execute(self.pool())
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Live (not deleted) sandboxes of an engine.
    pub async fn sandboxes_of_engine(&self, engine: &str) -> StoreResult<Vec<Sandbox>> {
        Ok(sqlx::query_as(
            "SELECT * FROM sandboxes WHERE COALESCE(engine, placement) = $1 \
             AND status <> 'deleted' ORDER BY created_at",
        )
        .bind(engine)
        .fetch_all(self.pool())
        .await?)
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

    /// A tenant's live runtime of Runtime API session `session` (not
    /// deleted).
    pub async fn runtime_by_session(
        &self,
        tenant_id: &str,
        session: &str,
    ) -> StoreResult<Option<Sandbox>> {
        Ok(sqlx::query_as(
            "SELECT * FROM sandboxes WHERE tenant_id = $1 AND runtime_session = $2 \
             AND status <> 'deleted'",
        )
        .bind(tenant_id)
        .bind(session)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Moves a sandbox from status `from` to `to`; false when it was not
    /// in `from` (another request moved it first).
    pub async fn move_sandbox_status(&self, id: &str, from: &str, to: &str) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE sandboxes SET status = $3 WHERE id = $1 AND status = $2")
            .bind(id)
            .bind(from)
            .bind(to)
            .execute(self.pool())
            .await?;
        Ok(r.rows_affected() == 1)
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

    /// Every sandbox that is not deleted, oldest first.
    pub async fn live_sandboxes(&self) -> StoreResult<Vec<Sandbox>> {
        Ok(
            sqlx::query_as("SELECT * FROM sandboxes WHERE status <> 'deleted' ORDER BY created_at")
                .fetch_all(self.pool())
                .await?,
        )
    }
}
