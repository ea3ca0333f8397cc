//! The control plane's database: SQLite (embedded, the default) or
//! PostgreSQL (shared by several control-plane instances), through sqlx's
//! `Any` driver with one set of portable migrations (`migrations/`).
//!
//! Every multi-row change is one transaction whose first statement is a
//! write, so SQLite takes its write lock up front (waiting on its busy
//! timeout) and PostgreSQL serializes writers on the rows they update;
//! counters that other instances race for (a tenant's running tasks, a
//! task's next output `seq`) are changed by conditional `UPDATE`s.

pub mod hosts;
pub mod sandboxes;
pub mod tasks;
pub mod tenants;
pub mod tickets;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor};
use std::time::Duration;

/// The migrations, embedded at compile time (no database is needed to build).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// A database failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database answered with an error or could not be reached.
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
    /// Applying the migrations failed.
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value is not what this version expects.
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The database handle (cheap to clone).
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    postgres: bool,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Store {
    /// Connects to `url` (`sqlite://…?mode=rwc` or `postgres://…`) and
    /// applies the migrations. `timeout` bounds connecting and every wait
    /// for a pooled connection.
    pub async fn connect(url: &str, timeout: Duration) -> StoreResult<Self> {
        sqlx::any::install_default_drivers();
        let postgres = url.starts_with("postgres");
        let pool = AnyPoolOptions::new()
            .max_connections(if postgres { 8 } else { 4 })
            .acquire_timeout(timeout)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // No statement waits forever on locks or a busy server.
                    if conn.backend_name() == "SQLite" {
                        conn.execute("PRAGMA busy_timeout = 15000").await?;
                    } else {
                        conn.execute("SET statement_timeout = 30000").await?;
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        if !postgres {
            pool.execute("PRAGMA journal_mode = WAL").await?;
        }
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool, postgres })
    }

    /// The pool.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.postgres
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

impl Store {
    /// The deployment's id: made by the first instance to ask (a random
    /// UUID), then the same for every instance on this database.
    pub async fn deployment_id(&self) -> StoreResult<String> {
        sqlx::query(
            "INSERT INTO deployment (name, value, created_at) VALUES ('id', $1, $2) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(
            sqlx::query_scalar("SELECT value FROM deployment WHERE name = 'id'")
                .fetch_one(&self.pool)
                .await?,
        )
    }
}
