//! Rows for tests that drive the store directly.

use super::{Db, database};
use openhands_control::store::sandboxes::Sandbox;
use openhands_control::store::tasks::Task;
use openhands_control::store::{Store, now_ms};
use std::time::Duration;

/// A store on SQLite in `dir`, or on a new PostgreSQL database; `None`
/// (the test skips, saying so) where no PostgreSQL can be started.
pub async fn store(postgres: bool, dir: &tempfile::TempDir) -> Option<Store> {
    let url = match database(postgres).await? {
        Db::Sqlite => format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("c.db").to_string_lossy()
        ),
        Db::Postgres(url) => url,
    };
    Some(Store::connect(&url, Duration::from_secs(30)).await.unwrap())
}

/// A ready local sandbox row of tenant `tenant`.
pub fn sandbox(tenant: &str) -> Sandbox {
    Sandbox {
        id: uuid::Uuid::new_v4().to_string(),
        tenant_id: tenant.to_string(),
        name: "s".into(),
        placement: "local".into(),
        engine: Some("local".into()),
        engine_id: None,
        status_reason: None,
        host_id: None,
        owner_instance: "a".into(),
        url: None,
        sealed_key: None,
        working_dir: "/w".into(),
        sealed_llm: None,
        llm_model: None,
        status: "ready".into(),
        current_task_id: None,
        task_busy: 0,
        created_by: "u".into(),
        created_at: now_ms(),
        deleted_at: None,
        runtime_session: None,
        sealed_runtime: None,
    }
}

/// A running task row in sandbox `s`, forwarded by instance "a" with
/// the lease of epoch 1.
pub fn task(s: &Sandbox) -> Task {
    Task {
        id: uuid::Uuid::new_v4().to_string(),
        sandbox_id: s.id.clone(),
        tenant_id: s.tenant_id.clone(),
        owner_user_id: "u".into(),
        session_id: uuid::Uuid::new_v4().to_string(),
        stream_id: uuid::Uuid::new_v4().to_string(),
        status: "running".into(),
        ended: 0,
        exit_code: None,
        exit_seq: None,
        next_seq: 0,
        output_bytes: 0,
        kept_from_seq: 1,
        pump_instance: Some("a".into()),
        pump_heartbeat: Some(now_ms()),
        last_event_id: None,
        lease_epoch: 1,
        created_at: now_ms(),
        updated_at: now_ms(),
        ended_at: None,
    }
}
