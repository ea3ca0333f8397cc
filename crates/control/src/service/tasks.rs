//! Task controls: start, steer, pause, resume, cancel, and the agent's
//! capability read.

use super::sandboxes::end_task;
use super::{ControlPlane, Inner};
use crate::agent_client::{AgentError, Endpoint};
use crate::auth::Caller;
use crate::config::{MAX_EVENT_BYTES, MAX_PROMPT_BYTES, OUTPUT_RETENTION_BYTES};
use crate::error::{ApiError, codes};
use crate::store::sandboxes::{Sandbox, status as sandbox_status};
use crate::store::tasks::{Line, StartRefusal, Task, Writer, status};
use crate::store::{StoreResult, now_ms};
use crate::tasks::lines;
use crate::views;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// The agent's tool set in every task.
const TOOLS: &[&str] = &["terminal", "file_editor", "task_tracker"];

/// Maps a failed call to a sandbox's host to the answer.
pub fn host_error(e: &AgentError) -> ApiError {
    match e.status() {
        Some(429) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            codes::SANDBOX_MODEL_LIMIT,
            "the sandbox's agent server runs as many tasks as it may",
        ),
        _ => ApiError::sandboxes_unavailable(e.to_string()),
    }
}

/// Checks a prompt: not blank, at most [`MAX_PROMPT_BYTES`] UTF-8 bytes.
pub fn check_prompt(prompt: &str) -> Result<(), ApiError> {
    if prompt.trim().is_empty() {
        return Err(ApiError::invalid("prompt must not be blank"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(ApiError::invalid(format!(
            "prompt is {} UTF-8 bytes; at most {MAX_PROMPT_BYTES} are allowed",
            prompt.len()
        )));
    }
    Ok(())
}

/// Which control to apply to the current task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Send a follow-up message.
    Steer(String),
    /// Pause after the current model call.
    Pause,
    /// Continue a paused task.
    Resume,
}

impl ControlPlane {
    pub(crate) fn require_tasks_enabled(&self) -> Result<(), ApiError> {
        if self.inner.config.tasks_enabled {
            Ok(())
        } else {
            Err(ApiError::agent_unavailable())
        }
    }

    fn ready_endpoint(&self, s: &Sandbox) -> Result<Endpoint, ApiError> {
        match s.status.as_str() {
            sandbox_status::READY => self.inner.endpoint(s),
            sandbox_status::FAILED | sandbox_status::LOST => {
                Err(ApiError::sandboxes_unavailable(format!(
                    "the sandbox is {}: {}",
                    s.status,
                    s.status_reason
                        .as_deref()
                        .unwrap_or("its agent server failed")
                )))
            }
            other => Err(ApiError::new(
                StatusCode::CONFLICT,
                codes::SANDBOX_NOT_READY,
                format!("the sandbox is {other}"),
            )),
        }
    }

    /// `GET …/agent`: whether task controls are on, the limits, the
    /// current task.
    pub async fn agent_info(&self, caller: &Caller, sandbox_id: &str) -> Result<Value, ApiError> {
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let tenant = self
            .inner
            .store
            .tenant(&caller.tenant_id)
            .await?
            .ok_or_else(ApiError::tenant_not_found)?;
        let current = match &s.current_task_id {
            Some(t) => self.inner.store.task(t).await?,
            None => None,
        };
        let enabled = self.inner.config.tasks_enabled;
        Ok(json!({
            "sandbox_id": s.id,
            "tasks_enabled": enabled,
            "controls": if enabled { json!(["start", "steer", "pause", "resume", "cancel"]) } else { json!(["cancel"]) },
            "limits": {
                "max_prompt_bytes": MAX_PROMPT_BYTES,
                "max_event_bytes": MAX_EVENT_BYTES,
                "output_retention_bytes": OUTPUT_RETENTION_BYTES,
                "reader_rotation_seconds": self.inner.config.output_rotation.as_secs_f64(),
                "max_running_tasks": tenant.max_running_tasks,
                "running_tasks": tenant.running_tasks,
            },
            "current_task": current.as_ref().map(views::task),
        }))
    }

    /// `POST …/agent/tasks`: starts the sandbox's next task with `prompt`.
    pub async fn start_task(
        &self,
        caller: &Caller,
        sandbox_id: &str,
        prompt: &str,
    ) -> Result<Value, ApiError> {
        self.require_tasks_enabled()?;
        check_prompt(prompt)?;
        let inner = &self.inner;
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let ep = self.ready_endpoint(&s)?;
        let llm = match &s.sealed_llm {
            Some(sealed) => {
                let text = inner.sealer.open(sealed).map_err(ApiError::internal)?;
                serde_json::from_str::<Value>(&text).map_err(ApiError::internal)?
            }
            None => inner.config.llm.to_json().ok_or_else(|| {
                ApiError::sandboxes_unavailable(
                    "the control plane has no LLM configured (LLM_MODEL) and the sandbox names none",
                )
            })?,
        };
        let now = now_ms();
        let task = Task {
            id: uuid::Uuid::new_v4().to_string(),
            sandbox_id: s.id.clone(),
            tenant_id: s.tenant_id.clone(),
            owner_user_id: caller.user_id.clone(),
            session_id: uuid::Uuid::new_v4().to_string(),
            stream_id: uuid::Uuid::new_v4().to_string(),
            status: status::STARTING.into(),
            ended: 0,
            exit_code: None,
            exit_seq: None,
            next_seq: 0,
            output_bytes: 0,
            kept_from_seq: 1,
            pump_instance: Some(inner.instance.clone()),
            pump_heartbeat: Some(now),
            last_event_id: None,
            lease_epoch: 1,
            created_at: now,
            updated_at: now,
            ended_at: None,
        };
        match inner.store.start_task(&task).await? {
            Ok(()) => {}
            Err(StartRefusal::Busy) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    codes::SANDBOX_AGENT_BUSY,
                    "the sandbox's current task is still running; cancel it or wait for its exit",
                ));
            }
            Err(StartRefusal::NotReady) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    codes::SANDBOX_NOT_READY,
                    "the sandbox is not ready",
                ));
            }
            Err(StartRefusal::Limit) => {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    codes::SANDBOX_MODEL_LIMIT,
                    "the tenant runs as many tasks as it may; wait for one to end",
                ));
            }
        }
        let tools: Vec<Value> = TOOLS.iter().map(|t| json!({"name": t})).collect();
        let body = json!({
            "conversation_id": task.session_id,
            "agent": {"kind": "Agent", "llm": llm, "tools": tools},
            "workspace": {"kind": "LocalWorkspace", "working_dir": s.working_dir},
            "initial_message": {
                "role": "user",
                "content": [{"type": "text", "text": prompt}],
                "run": true
            },
            "autotitle": false,
        });
        if let Err(e) = inner.client.create_conversation(&ep, &body).await {
            let reason = format!("the task could not start: {e}");
            end_task(inner, &task, status::FAILED, 1, &reason).await?;
            // The conversation may exist if only the answer was lost.
            let _ = inner
                .client
                .delete_conversation(&ep, &task.session_id)
                .await;
            return Err(host_error(&e));
        }
        inner
            .store
            .set_task_status(
                &task.id,
                status::RUNNING,
                &[Line::stdout(lines::task_status(
                    &task.id,
                    status::RUNNING,
                    None,
                ))],
                inner.retention(),
                Writer::Control,
            )
            .await?;
        inner.wake(&task.id);
        let mut pumped = task.clone();
        pumped.status = status::RUNNING.into();
        inner.spawn_pump(pumped, ep);
        let fresh = inner.store.task(&task.id).await?.unwrap_or(task);
        Ok(views::task(&fresh))
    }

    /// The sandbox's current task if it is `task_id`, else 409
    /// `sandbox_agent_session_changed`.
    pub async fn current_task(&self, s: &Sandbox, task_id: &str) -> Result<Task, ApiError> {
        if s.current_task_id.as_deref() != Some(task_id) {
            return Err(ApiError::session_changed());
        }
        self.inner
            .store
            .task(task_id)
            .await?
            .ok_or_else(ApiError::session_changed)
    }

    /// `POST …/agent/tasks/{steer,pause,resume}`: 202 with the task object.
    pub async fn control_task(
        &self,
        caller: &Caller,
        sandbox_id: &str,
        task_id: &str,
        control: Control,
    ) -> Result<Value, ApiError> {
        self.require_tasks_enabled()?;
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let task = self.current_task(&s, task_id).await?;
        if task.owner_user_id != caller.user_id {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                codes::TASK_OWNER_REQUIRED,
                "only the user who started the task may control it",
            ));
        }
        if task.is_ended() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                codes::SANDBOX_AGENT_TASK_ENDED,
                format!("the task has ended ({}); start a new one", task.status),
            ));
        }
        let ep = self.ready_endpoint(&s)?;
        let client = &self.inner.client;
        let result = match &control {
            // Never retried: a lost answer must not deliver a message twice.
            Control::Steer(prompt) => {
                let run = task.status != status::PAUSED;
                client
                    .send_message(&ep, &task.session_id, prompt, run)
                    .await
            }
            Control::Pause => client.pause(&ep, &task.session_id).await,
            Control::Resume => match client.run(&ep, &task.session_id).await {
                // Already running: resuming is done.
                Err(e) if e.status() == Some(409) => Ok(()),
                other => other,
            },
        };
        result.map_err(|e| host_error(&e))?;
        let fresh = self.inner.store.task(task_id).await?.unwrap_or(task);
        Ok(views::task(&fresh))
    }

    /// `DELETE …/agent/tasks?task_id=`: cancels the current task (the
    /// model call is interrupted; exit code 130).
    pub async fn cancel_task(
        &self,
        caller: &Caller,
        sandbox_id: &str,
        task_id: &str,
    ) -> Result<Value, ApiError> {
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let task = self.current_task(&s, task_id).await?;
        if task.owner_user_id != caller.user_id {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                codes::TASK_OWNER_REQUIRED,
                "only the user who started the task may cancel it",
            ));
        }
        if !task.is_ended() {
            let ep = self.inner.endpoint(&s)?;
            // Interrupt first so no further step runs; the task ends even
            // when the host does not answer (its work is abandoned).
            let interrupted = self.inner.client.interrupt(&ep, &task.session_id).await;
            let reason = match &interrupted {
                Ok(()) => "cancelled by request".to_string(),
                Err(e) => format!("cancelled by request (the sandbox did not confirm: {e})"),
            };
            end_task(&self.inner, &task, status::CANCELLED, 130, &reason).await?;
        }
        let fresh = self.inner.store.task(task_id).await?.unwrap_or(task);
        Ok(views::task(&fresh))
    }
}

/// Takes over forwarding running tasks whose forwarder stopped renewing
/// its heartbeat (its instance died).
pub(crate) async fn adopt_orphans(inner: &Arc<Inner>) -> StoreResult<()> {
    for mut t in inner.store.orphaned_tasks(inner.stale_before()).await? {
        let Some(epoch) = inner
            .store
            .claim_pump(&t.id, &inner.instance, inner.stale_before())
            .await?
        else {
            continue;
        };
        t.lease_epoch = epoch;
        let Some(s) = inner.store.sandbox_by_id(&t.sandbox_id).await? else {
            continue;
        };
        match inner.endpoint(&s) {
            Ok(ep) => {
                tracing::info!(task = %t.id, "taking over the task's event forwarding");
                inner.spawn_pump(t, ep);
            }
            Err(e) => {
                let _ = end_task(inner, &t, status::FAILED, 1, &e.message).await;
            }
        }
    }
    Ok(())
}

/// After a start: resumes forwarding the running tasks this instance
/// forwarded before it stopped (same instance id), from the last event
/// recorded — without waiting for their heartbeat to go stale.
pub(crate) async fn resume_forwarding(inner: &Arc<Inner>) {
    let mine = match inner.store.tasks_forwarded_by(&inner.instance).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("listing this instance's running tasks failed: {e}");
            return;
        }
    };
    for mut t in mine {
        match inner
            .store
            .claim_pump(&t.id, &inner.instance, inner.stale_before())
            .await
        {
            Ok(Some(epoch)) => t.lease_epoch = epoch,
            _ => continue,
        }
        let Ok(Some(s)) = inner.store.sandbox_by_id(&t.sandbox_id).await else {
            continue;
        };
        if s.status != sandbox_status::READY {
            continue;
        }
        if let Ok(ep) = inner.endpoint(&s) {
            tracing::info!(task = %t.id, "resuming the task's event forwarding");
            inner.spawn_pump(t, ep);
        }
    }
}
