//! The JSON objects the API answers with.

use crate::store::sandboxes::Sandbox;
use crate::store::tasks::Task;
use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

/// RFC 3339 of Unix milliseconds.
pub fn time(ms: i64) -> Value {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|t| Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
        .unwrap_or(Value::Null)
}

/// The task object: `id`, `session_id`, `stream_id`, `status` (the spec's
/// fields) and details.
pub fn task(t: &Task) -> Value {
    json!({
        "id": t.id,
        "session_id": t.session_id,
        "stream_id": t.stream_id,
        "status": t.status,
        "sandbox_id": t.sandbox_id,
        "owner_user_id": t.owner_user_id,
        "ended": t.is_ended(),
        "exit_code": t.exit_code,
        "created_at": time(t.created_at),
        "ended_at": t.ended_at.map(time),
    })
}

/// The sandbox object.
pub fn sandbox(s: &Sandbox, current: Option<&Task>, default_model: Option<&str>) -> Value {
    json!({
        "id": s.id,
        "tenant_id": s.tenant_id,
        "name": s.name,
        "status": s.status,
        "placement": s.placement,
        "engine": s.engine.as_deref().unwrap_or(&s.placement),
        "status_reason": s.status_reason,
        "host_id": s.host_id,
        "llm": {
            "model": s.llm_model.as_deref().or(default_model),
            "source": if s.llm_model.is_some() { "sandbox" } else { "control_plane" },
        },
        "created_by": s.created_by,
        "created_at": time(s.created_at),
        "runtime_session_id": s.runtime_session,
        "current_task": current.map(task),
    })
}
