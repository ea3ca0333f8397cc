//! Registered remote sandbox hosts (agent servers).

use super::{Store, StoreResult, now_ms};
use uuid::Uuid;

/// A registered agent server.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Host {
    /// Id (UUID).
    pub id: String,
    /// Base URL (`http://host:port`).
    pub url: String,
    /// Its session API key, sealed.
    pub sealed_key: String,
    /// Directory on the host under which sandboxes get their working dirs.
    pub workspace_root: String,
    /// Whether new sandboxes may be placed on it (1) or not (0).
    pub enabled: i64,
    /// Registration time (Unix ms).
    pub created_at: i64,
    /// Whether its last health check passed (1) or not (0).
    pub healthy: i64,
    /// Why its last health check failed.
    pub health_error: Option<String>,
    /// When it was last checked (Unix ms).
    pub checked_at: Option<i64>,
}

/// A host with its number of live sandboxes.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HostLoad {
    /// Id.
    pub id: String,
    /// Base URL.
    pub url: String,
    /// Whether enabled.
    pub enabled: i64,
    /// Whether its last health check passed.
    pub healthy: i64,
    /// Why its last health check failed.
    pub health_error: Option<String>,
    /// Sandboxes not deleted.
    pub sandboxes: i64,
}

impl Store {
    /// Registers a host, or updates the key and root of the one with this
    /// URL (and enables it again).
    pub async fn upsert_host(
        &self,
        url: &str,
        sealed_key: &str,
        workspace_root: &str,
    ) -> StoreResult<Host> {
        sqlx::query(
            "INSERT INTO hosts (id, url, sealed_key, workspace_root, enabled, created_at) \
             VALUES ($1, $2, $3, $4, 1, $5) \
             ON CONFLICT (url) DO UPDATE SET sealed_key = excluded.sealed_key, \
             workspace_root = excluded.workspace_root, enabled = 1, healthy = 1, \
             health_error = NULL",
        )
        .bind(Uuid::new_v4().to_string())
        .bind(url)
        .bind(sealed_key)
        .bind(workspace_root)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        let host: Host = sqlx::query_as("SELECT * FROM hosts WHERE url = $1")
            .bind(url)
            .fetch_one(self.pool())
            .await?;
        Ok(host)
    }

    /// The host with id `id`.
    pub async fn host(&self, id: &str) -> StoreResult<Option<Host>> {
        Ok(sqlx::query_as("SELECT * FROM hosts WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Every host with its load.
    pub async fn host_loads(&self) -> StoreResult<Vec<HostLoad>> {
        Ok(sqlx::query_as(
            "SELECT h.id, h.url, h.enabled, h.healthy, h.health_error, \
             (SELECT COUNT(*) FROM sandboxes s WHERE s.host_id = h.id AND s.status <> 'deleted') \
             AS sandboxes FROM hosts h ORDER BY h.created_at",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// The enabled, healthy host with the fewest live sandboxes (oldest
    /// first on ties).
    pub async fn least_loaded_host(&self) -> StoreResult<Option<Host>> {
        Ok(sqlx::query_as(
            "SELECT h.* FROM hosts h WHERE h.enabled = 1 AND h.healthy = 1 ORDER BY \
             (SELECT COUNT(*) FROM sandboxes s WHERE s.host_id = h.id AND s.status <> 'deleted'), \
             h.created_at LIMIT 1",
        )
        .fetch_optional(self.pool())
        .await?)
    }

    /// Whether any host is enabled.
    pub async fn any_enabled_host(&self) -> StoreResult<bool> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM hosts WHERE enabled = 1")
            .fetch_one(self.pool())
            .await?;
        Ok(n > 0)
    }

    /// The enabled hosts (to check their health).
    pub async fn enabled_hosts(&self) -> StoreResult<Vec<Host>> {
        Ok(
            sqlx::query_as("SELECT * FROM hosts WHERE enabled = 1 ORDER BY created_at")
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Records a health check of a host: `None` when it answered, else
    /// why not. True when its health changed.
    pub async fn set_host_health(&self, id: &str, error: Option<&str>) -> StoreResult<bool> {
        let healthy = i64::from(error.is_none());
        let r = sqlx::query(
            "UPDATE hosts SET healthy = $2, health_error = $3, checked_at = $4 \
             WHERE id = $1 AND healthy <> $2",
        )
        .bind(id)
        .bind(healthy)
        .bind(error)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        if r.rows_affected() == 0 {
            sqlx::query("UPDATE hosts SET checked_at = $2, health_error = $3 WHERE id = $1")
                .bind(id)
                .bind(now_ms())
                .bind(error)
                .execute(self.pool())
                .await?;
        }
        Ok(r.rows_affected() > 0)
    }

    /// Stops placing sandboxes on the host with id or URL `key` (its
    /// sandboxes keep working); false when there is none.
    pub async fn disable_host(&self, key: &str) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE hosts SET enabled = 0 WHERE id = $1 OR url = $1")
            .bind(key)
            .execute(self.pool())
            .await?;
        Ok(r.rows_affected() > 0)
    }
}
