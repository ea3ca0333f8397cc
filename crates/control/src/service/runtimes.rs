//! The OpenHands Runtime API's operations (served at `/v1/runtime`): a
//! runtime is one of the tenant's sandboxes, started for a client's
//! session id, found again by it, paused, resumed and stopped.
//!
//! What a runtime answer carries is what the reference's
//! `APIRemoteWorkspace` reads: `runtime_id`, `url`, `session_api_key`,
//! `status` (`running`, `paused`, `pending`, `failed`) and `pod_status`
//! (`ready`, `paused`, `pending`, `failed`), plus `session_id`,
//! `working_dir` (where the agent works) and `image`.

use super::ControlPlane;
use super::sandboxes::{NewRuntime, NewSandbox, finish_delete, runtime_spec};
use crate::agent_client::Endpoint;
use crate::auth::Caller;
use crate::engines::{self, RuntimeSpec};
use crate::error::{ApiError, codes};
use crate::store::sandboxes::{Sandbox, status};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a resumed runtime's agent server may take to answer again.
const RESUME_WAIT: Duration = Duration::from_secs(30);

/// Where the agent of a runtime on an image-based engine works (the
/// reference client's default `working_dir`).
pub const IMAGE_WORKSPACE: &str = "/workspace";

fn runtime_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::SANDBOX_NOT_FOUND,
        "no such runtime",
    )
}

fn not_ready(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, codes::SANDBOX_NOT_READY, message)
}

/// The Runtime API's `status` and `pod_status` of a sandbox status.
pub fn runtime_status(sandbox_status: &str) -> (&'static str, &'static str) {
    match sandbox_status {
        status::READY => ("running", "ready"),
        status::PAUSED => ("paused", "paused"),
        status::STARTING => ("pending", "pending"),
        status::DELETING | status::DELETED => ("stopped", "not found"),
        _ => ("failed", "failed"),
    }
}

impl ControlPlane {
    /// The runtime answer of a sandbox.
    fn runtime_view(&self, s: &Sandbox) -> Result<Value, ApiError> {
        let (st, pod) = runtime_status(&s.status);
        let key = match &s.sealed_key {
            Some(sealed) => Some(self.inner.sealer.open(sealed).map_err(ApiError::internal)?),
            None => None,
        };
        let spec = runtime_spec(&self.inner, s).map_err(ApiError::internal)?;
        let engine = s.engine.as_deref().unwrap_or(&s.placement);
        let working_dir = match engine {
            engines::DOCKER | engines::SWARM | engines::KUBERNETES => IMAGE_WORKSPACE.to_string(),
            _ => s.working_dir.clone(),
        };
        Ok(json!({
            "runtime_id": s.id,
            "session_id": s.runtime_session,
            "url": s.url,
            "session_api_key": key,
            "status": st,
            "pod_status": pod,
            "pod_logs": s.status_reason,
            "restart_count": 0,
            "image": spec.image,
            "engine": engine,
            "working_dir": working_dir,
        }))
    }

    /// `POST /start`: the tenant's live runtime of `session_id` if there
    /// is one (attached, not started again), else a new sandbox started
    /// with `spec`. A failed or lost runtime of the session is released
    /// and replaced.
    pub async fn start_runtime(
        &self,
        caller: &Caller,
        session_id: String,
        spec: RuntimeSpec,
    ) -> Result<Value, ApiError> {
        let inner = &self.inner;
        if let Some(s) = inner
            .store
            .runtime_by_session(&caller.tenant_id, &session_id)
            .await?
        {
            match s.status.as_str() {
                status::READY | status::PAUSED | status::STARTING => {
                    return self.runtime_view(&s);
                }
                status::DELETING => {
                    return Err(not_ready(
                        "the runtime of this session is being stopped; start it again once it is gone",
                    ));
                }
                _ => {
                    if inner.store.mark_sandbox_deleting(&s.id).await? {
                        finish_delete(inner, &s).await?;
                    }
                }
            }
        }
        let req = NewSandbox {
            name: Some(format!("runtime {session_id}")),
            llm: None,
            runtime: Some(NewRuntime { session_id, spec }),
        };
        let placed = self.new_sandbox(caller, req).await?;
        self.runtime_view(&placed)
    }

    /// `GET /sessions/{session_id}`: the tenant's live runtime of the
    /// session, or 404 (also once it is being stopped).
    pub async fn runtime_of_session(
        &self,
        caller: &Caller,
        session_id: &str,
    ) -> Result<Value, ApiError> {
        let s = self
            .inner
            .store
            .runtime_by_session(&caller.tenant_id, session_id)
            .await?
            .filter(|s| s.status != status::DELETING)
            .ok_or_else(runtime_not_found)?;
        self.runtime_view(&s)
    }

    async fn find_runtime(&self, caller: &Caller, runtime_id: &str) -> Result<Sandbox, ApiError> {
        match self.find_sandbox(caller, runtime_id).await {
            Ok(s) if s.status != status::DELETING => Ok(s),
            Ok(_) => Err(runtime_not_found()),
            Err(e) if e.status == StatusCode::NOT_FOUND => Err(runtime_not_found()),
            Err(e) => Err(e),
        }
    }

    /// `POST /pause`: freezes a running runtime (its processes stop, its
    /// files and endpoint stay). Pausing a paused one changes nothing.
    pub async fn pause_runtime(
        &self,
        caller: &Caller,
        runtime_id: &str,
    ) -> Result<Value, ApiError> {
        let inner = &self.inner;
        let s = self.find_runtime(caller, runtime_id).await?;
        if s.status == status::PAUSED {
            return self.runtime_view(&s);
        }
        if s.status != status::READY {
            return Err(not_ready(format!(
                "the runtime is {}, not running",
                s.status
            )));
        }
        if s.task_busy != 0 {
            return Err(not_ready(
                "the runtime runs a task; cancel or finish it first",
            ));
        }
        let engine = inner
            .engines
            .of(&s)
            .ok_or_else(|| ApiError::internal(format!("unknown engine {:?}", s.engine)))?;
        if !inner
            .store
            .move_sandbox_status(&s.id, status::READY, status::PAUSED)
            .await?
        {
            return Err(not_ready("the runtime changed state meanwhile; try again"));
        }
        if let Err(e) = engine.pause(&s).await {
            let _ = inner
                .store
                .move_sandbox_status(&s.id, status::PAUSED, status::READY)
                .await;
            return Err(ApiError::invalid(format!(
                "the runtime cannot be paused: {e}"
            )));
        }
        let mut paused = s;
        paused.status = status::PAUSED.into();
        self.runtime_view(&paused)
    }

    /// `POST /resume`: thaws a paused runtime and answers once its agent
    /// server answers again. Resuming a running one changes nothing.
    pub async fn resume_runtime(
        &self,
        caller: &Caller,
        runtime_id: &str,
    ) -> Result<Value, ApiError> {
        let inner = &self.inner;
        let s = self.find_runtime(caller, runtime_id).await?;
        if s.status == status::READY {
            return self.runtime_view(&s);
        }
        if s.status != status::PAUSED {
            return Err(not_ready(format!(
                "the runtime is {}, not paused",
                s.status
            )));
        }
        let engine = inner
            .engines
            .of(&s)
            .ok_or_else(|| ApiError::internal(format!("unknown engine {:?}", s.engine)))?;
        engine
            .resume(&s)
            .await
            .map_err(|e| ApiError::sandboxes_unavailable(format!("resuming the runtime: {e}")))?;
        let ep: Endpoint = inner.endpoint(&s)?;
        inner
            .client
            .wait_ready(&ep, RESUME_WAIT)
            .await
            .map_err(|e| {
                ApiError::sandboxes_unavailable(format!(
                    "the resumed runtime's agent server does not answer: {e}"
                ))
            })?;
        inner
            .store
            .move_sandbox_status(&s.id, status::PAUSED, status::READY)
            .await?;
        let mut running = s;
        running.status = status::READY.into();
        self.runtime_view(&running)
    }

    /// `POST /stop`: deletes the runtime's sandbox (a paused one is thawed
    /// first so its processes end promptly).
    pub async fn stop_runtime(&self, caller: &Caller, runtime_id: &str) -> Result<Value, ApiError> {
        let s = self.find_runtime(caller, runtime_id).await?;
        if s.status == status::PAUSED
            && let Some(engine) = self.inner.engines.of(&s)
            && let Err(e) = engine.resume(&s).await
        {
            tracing::warn!(sandbox = %s.id, "thawing a paused runtime before stopping it: {e}");
        }
        self.delete_sandbox(caller, &s.id).await?;
        Ok(json!({"runtime_id": s.id, "session_id": s.runtime_session, "status": "stopped"}))
    }
}
