//! The SSH relay's records: tickets (single-use, short-lived, stored only
//! as a hash) and its host key (sealed).

use super::{Store, StoreResult, now_ms};

/// A stored ticket (its secret is never stored).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Ticket {
    /// SHA-256 of the ticket (hex).
    pub ticket_hash: String,
    /// The sandbox's tenant.
    pub tenant_id: String,
    /// The one sandbox it opens.
    pub sandbox_id: String,
    /// The user who asked for it.
    pub user_id: String,
    /// The credential the user asked with.
    pub credential_id: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Expiry (Unix ms).
    pub expires_at: i64,
    /// When it was used (Unix ms), once used.
    pub used_at: Option<i64>,
}

impl Store {
    /// Stores a new ticket (also drops tickets expired for a minute).
    pub async fn insert_ticket(&self, t: &Ticket) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO ssh_tickets (ticket_hash, tenant_id, sandbox_id, user_id, credential_id, \
             created_at, expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)",
        )
        .bind(&t.ticket_hash)
        .bind(&t.tenant_id)
        .bind(&t.sandbox_id)
        .bind(&t.user_id)
        .bind(&t.credential_id)
        .bind(t.created_at)
        .bind(t.expires_at)
        .execute(self.pool())
        .await?;
        sqlx::query("DELETE FROM ssh_tickets WHERE expires_at < $1")
            .bind(now_ms() - 60_000)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Uses the ticket with hash `hash`: marks it used and returns it,
    /// or `None` when there is none, it was used already or it expired.
    /// One conditional `UPDATE`, so two instances cannot both use it.
    pub async fn use_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>> {
        let now = now_ms();
        let r = sqlx::query(
            "UPDATE ssh_tickets SET used_at = $2 \
             WHERE ticket_hash = $1 AND used_at IS NULL AND expires_at > $2",
        )
        .bind(hash)
        .bind(now)
        .execute(self.pool())
        .await?;
        if r.rows_affected() != 1 {
            return Ok(None);
        }
        Ok(
            sqlx::query_as("SELECT * FROM ssh_tickets WHERE ticket_hash = $1")
                .bind(hash)
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

impl Store {
    /// A credential by id (whatever its state).
    pub async fn credential_by_id(
        &self,
        id: &str,
    ) -> StoreResult<Option<super::tenants::Credential>> {
        Ok(sqlx::query_as("SELECT * FROM credentials WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }
}

impl Store {
    /// The sealed host key `id`, storing `sealed` first when there is none
    /// (the first instance to get here wins; every instance reads the
    /// winner's).
    pub async fn host_key_or_insert(&self, id: &str, sealed: &str) -> StoreResult<String> {
        sqlx::query(
            "INSERT INTO ssh_host_keys (id, sealed_key, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(sealed)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(
            sqlx::query_scalar("SELECT sealed_key FROM ssh_host_keys WHERE id = $1")
                .bind(id)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// The sealed host key `id`, if one was made.
    pub async fn host_key(&self, id: &str) -> StoreResult<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT sealed_key FROM ssh_host_keys WHERE id = $1")
                .bind(id)
                .fetch_optional(self.pool())
                .await?,
        )
    }
}
