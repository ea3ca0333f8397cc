//! Sandbox lifecycle: placement, provisioning, reads, deletion, and what
//! happens when a local sandbox's process dies.

use super::{ControlPlane, Inner};
use crate::agent_client::{AgentClient, Endpoint};
use crate::auth::Caller;
use crate::config::SandboxMode;
use crate::error::ApiError;
use crate::hosts::{ProvisionError, SandboxLayout, find_agent_server};
use crate::secrets::new_credential;
use crate::store::sandboxes::{Sandbox, status};
use crate::store::tasks::{self, Task};
use crate::store::{StoreResult, now_ms};
use crate::tasks::lines;
use crate::views;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for a new sandbox's agent server to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A validated sandbox-create request.
#[derive(Debug, Clone, Default)]
pub struct NewSandbox {
    /// Display name.
    pub name: Option<String>,
    /// The reference's LLM JSON for this sandbox.
    pub llm: Option<Value>,
}

/// Checks an LLM JSON: an object the reference's `LLM` model accepts, with
/// a model. Returns the model.
pub fn validate_llm(llm: &Value) -> Result<String, ApiError> {
    if !llm.is_object() {
        return Err(ApiError::invalid(
            "llm must be a JSON object (the reference's LLM settings)",
        ));
    }
    let parsed: openhands_wire::LlmConfig =
        serde_json::from_value(llm.clone()).map_err(|e| ApiError::invalid(format!("llm: {e}")))?;
    if parsed.model.trim().is_empty() {
        return Err(ApiError::invalid("llm.model must not be empty"));
    }
    Ok(parsed.model)
}

/// Polls until the agent server answers an authenticated request.
pub async fn wait_ready(
    client: &AgentClient,
    ep: &Endpoint,
    limit: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < limit {
        match client.check(ep).await {
            Ok(()) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("not ready after {limit:?}: {last}"))
}

fn layout(inner: &Inner, sandbox_id: &str) -> SandboxLayout {
    SandboxLayout::new(inner.data_dir.join("sandboxes").join(sandbox_id))
}

/// Starts (or restarts) the process or container of a local/docker
/// sandbox; returns its endpoint once it answers.
async fn launch(inner: &Arc<Inner>, s: &Sandbox, key: &str) -> Result<Endpoint, ProvisionError> {
    let lay = layout(inner, &s.id);
    let secret = new_credential("").map_err(|e| ProvisionError::Start(e.to_string()))?;
    let (k, l) = (key.to_string(), lay.clone());
    let sandbox_conversations = s.placement == "local" && inner.local.confined();
    tokio::task::spawn_blocking(move || l.prepare(&k, &secret, sandbox_conversations))
        .await
        .map_err(|e| ProvisionError::Start(e.to_string()))??;
    let url = if s.placement == "docker" {
        inner.docker.check().await?;
        inner
            .docker
            .start(&s.id, &lay, inner.config.host_timeout)
            .await?
    } else {
        let configured = inner.config.agent_server_bin.clone();
        let bin = tokio::task::spawn_blocking(move || find_agent_server(configured.as_deref()))
            .await
            .map_err(|e| ProvisionError::Start(e.to_string()))?
            .ok_or(ProvisionError::NoBinary)?;
        inner.local.start(&s.id, &bin, &lay, START_TIMEOUT).await?
    };
    let ep = Endpoint {
        url,
        key: key.to_string(),
    };
    if let Err(e) = wait_ready(&inner.client, &ep, START_TIMEOUT).await {
        release_process(inner, s).await;
        return Err(ProvisionError::Start(e));
    }
    Ok(ep)
}

async fn release_process(inner: &Inner, s: &Sandbox) {
    match s.placement.as_str() {
        "local" => inner.local.stop(&s.id).await,
        "docker" => inner.docker.stop(&s.id).await,
        _ => {}
    }
}

impl ControlPlane {
    /// Creates a sandbox in the caller's tenant: on the least loaded
    /// registered host if any is enabled, else locally or in docker.
    pub async fn create_sandbox(
        &self,
        caller: &Caller,
        req: NewSandbox,
    ) -> Result<Value, ApiError> {
        let inner = &self.inner;
        let llm_model = match &req.llm {
            Some(llm) => Some(validate_llm(llm)?),
            None => None,
        };
        if llm_model.is_none() && inner.config.llm.to_json().is_none() {
            return Err(ApiError::invalid(
                "no LLM: the control plane has no LLM_MODEL configured, so the request must name one in `llm`",
            ));
        }
        let host = inner.store.least_loaded_host().await?;
        let id = uuid::Uuid::new_v4().to_string();
        let placement = match (&host, inner.config.sandbox_mode) {
            (Some(_), _) => "host",
            (None, SandboxMode::Local) => "local",
            (None, SandboxMode::Docker) => "docker",
        };
        let working_dir = match &host {
            Some(h) => format!("{}/{id}", h.workspace_root.trim_end_matches('/')),
            None => layout(inner, &id)
                .workspace()
                .to_string_lossy()
                .into_owned(),
        };
        let mut s = Sandbox {
            id: id.clone(),
            tenant_id: caller.tenant_id.clone(),
            name: req
                .name
                .clone()
                .unwrap_or_else(|| format!("sandbox-{}", &id[..8])),
            placement: placement.to_string(),
            host_id: host.as_ref().map(|h| h.id.clone()),
            owner_instance: inner.instance.clone(),
            url: None,
            sealed_key: None,
            working_dir,
            sealed_llm: req.llm.as_ref().map(|l| inner.sealer.seal(&l.to_string())),
            llm_model,
            status: status::STARTING.to_string(),
            current_task_id: None,
            task_busy: 0,
            created_by: caller.user_id.clone(),
            created_at: now_ms(),
            deleted_at: None,
        };
        inner.store.insert_sandbox(&s).await?;
        if placement == "local" {
            self.refuse_unconfined_sharing(&s).await?;
        }
        let endpoint = match &host {
            Some(h) => {
                let key = inner
                    .sealer
                    .open(&h.sealed_key)
                    .map_err(ApiError::internal)?;
                let ep = Endpoint {
                    url: h.url.clone(),
                    key,
                };
                inner
                    .client
                    .check(&ep)
                    .await
                    .map(|()| ep)
                    .map_err(|e| ProvisionError::Start(format!("host {}: {e}", h.url)))
            }
            None => {
                let key = new_credential("ohs_").map_err(ApiError::internal)?;
                launch(&self.inner, &s, &key).await
            }
        };
        match endpoint {
            Ok(ep) => {
                let sealed = inner.sealer.seal(&ep.key);
                inner
                    .store
                    .set_sandbox_endpoint(&id, &ep.url, &sealed, status::READY)
                    .await?;
                s.url = Some(ep.url);
                s.sealed_key = Some(sealed);
                s.status = status::READY.into();
                Ok(self.sandbox_view(&s).await?)
            }
            Err(e) => {
                tracing::warn!(sandbox = %id, "provisioning failed: {e}");
                inner.store.set_sandbox_status(&id, status::FAILED).await?;
                Err(ApiError::sandboxes_unavailable(format!(
                    "the sandbox could not be started: {e}"
                )))
            }
        }
    }

    /// Where local sandboxes cannot be confined, they are kept to one
    /// tenant unless `OH_CONTROL_ALLOW_UNCONFINED` accepts more: a new
    /// local sandbox `s` (already inserted, so two tenants racing both see
    /// each other) of a second tenant is withdrawn and refused.
    async fn refuse_unconfined_sharing(&self, s: &Sandbox) -> Result<(), ApiError> {
        let inner = &self.inner;
        let Some(why) = inner.local.confinement().unavailable() else {
            return Ok(());
        };
        if inner.config.allow_unconfined
            || !inner
                .store
                .others_have_local_sandboxes(&inner.instance, &s.tenant_id)
                .await?
        {
            return Ok(());
        }
        inner.store.mark_sandbox_deleted(&s.id).await?;
        Err(ApiError::sandboxes_unavailable(format!(
            "local sandboxes cannot be confined on this machine ({why}), so they serve one tenant \
             and another tenant has them; set OH_CONTROL_ALLOW_UNCONFINED=1 to let tenants share \
             it without confinement"
        )))
    }

    pub(crate) async fn sandbox_view(&self, s: &Sandbox) -> Result<Value, ApiError> {
        let current = match &s.current_task_id {
            Some(t) => self.inner.store.task(t).await?,
            None => None,
        };
        Ok(views::sandbox(
            s,
            current.as_ref(),
            self.inner.config.llm.model.as_deref(),
        ))
    }

    /// The caller's tenant's sandbox, or 404.
    pub async fn find_sandbox(
        &self,
        caller: &Caller,
        sandbox_id: &str,
    ) -> Result<Sandbox, ApiError> {
        if uuid::Uuid::try_parse(sandbox_id).is_err() {
            return Err(ApiError::sandbox_not_found());
        }
        self.inner
            .store
            .sandbox(&caller.tenant_id, sandbox_id)
            .await?
            .ok_or_else(ApiError::sandbox_not_found)
    }

    /// The caller's tenant's sandboxes.
    pub async fn list_sandboxes(&self, caller: &Caller) -> Result<Value, ApiError> {
        let mut out = Vec::new();
        for s in self.inner.store.sandboxes(&caller.tenant_id).await? {
            out.push(self.sandbox_view(&s).await?);
        }
        Ok(serde_json::json!({"sandboxes": out}))
    }

    /// Deletes a sandbox: its running task is cancelled, its process or
    /// container stopped and its directory removed (by the instance that
    /// owns it; another instance marks it and the owner finishes).
    pub async fn delete_sandbox(
        &self,
        caller: &Caller,
        sandbox_id: &str,
    ) -> Result<Value, ApiError> {
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let inner = &self.inner;
        if !inner.store.mark_sandbox_deleting(&s.id).await? {
            return Err(ApiError::sandbox_not_found());
        }
        for t in inner.store.running_tasks_of(&s.id).await? {
            end_task(
                inner,
                &t,
                tasks::status::CANCELLED,
                130,
                "the sandbox was deleted",
            )
            .await?;
        }
        let owned_here = s.owner_instance == inner.instance || s.placement == "host";
        if owned_here {
            finish_delete(inner, &s).await?;
            Ok(serde_json::json!({"id": s.id, "status": status::DELETED}))
        } else {
            Ok(serde_json::json!({"id": s.id, "status": status::DELETING}))
        }
    }

    /// Relaunches the local and docker sandboxes this instance owns (after
    /// a restart); their unfinished tasks fail, since their agent server
    /// was stopped under them.
    pub(crate) async fn relaunch_owned(&self) {
        let inner = &self.inner;
        let owned = match inner.store.owned_sandboxes(&inner.instance).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!("listing owned sandboxes failed: {e}");
                return;
            }
        };
        for s in owned {
            if s.status == status::DELETING {
                if let Err(e) = finish_delete(inner, &s).await {
                    tracing::warn!(sandbox = %s.id, "finishing a delete failed: {e}");
                }
                continue;
            }
            if let Ok(running) = inner.store.running_tasks_of(&s.id).await {
                for t in running {
                    let _ = end_task(
                        inner,
                        &t,
                        tasks::status::FAILED,
                        1,
                        "the control plane restarted and its sandbox's agent server with it",
                    )
                    .await;
                }
            }
            let key = match s.sealed_key.as_deref().map(|k| inner.sealer.open(k)) {
                Some(Ok(k)) => k,
                _ => continue,
            };
            match launch(inner, &s, &key).await {
                Ok(ep) => {
                    let sealed = inner.sealer.seal(&ep.key);
                    if let Err(e) = inner
                        .store
                        .set_sandbox_endpoint(&s.id, &ep.url, &sealed, status::READY)
                        .await
                    {
                        tracing::warn!(sandbox = %s.id, "recording a relaunch failed: {e}");
                    }
                }
                Err(e) => {
                    tracing::warn!(sandbox = %s.id, "relaunching failed: {e}");
                    let _ = inner.store.set_sandbox_status(&s.id, status::FAILED).await;
                }
            }
        }
    }
}

/// Ends a task with `status`/`exit_code`, writing a `task_error` and the
/// final `task_status`; stops its forwarder here and wakes readers.
pub(crate) async fn end_task(
    inner: &Inner,
    t: &Task,
    status: &str,
    exit_code: i64,
    reason: &str,
) -> StoreResult<bool> {
    let code = match status {
        tasks::status::CANCELLED => "task_cancelled",
        _ => "task_failed",
    };
    let ended = inner
        .store
        .end_task(
            &t.id,
            status,
            exit_code,
            &[
                (tasks::STDERR, lines::diagnostic(reason)),
                (tasks::STDOUT, lines::task_error(&t.id, code, reason)),
                (
                    tasks::STDOUT,
                    lines::task_status(&t.id, status, Some(exit_code)),
                ),
            ],
            inner.retention(),
        )
        .await?;
    inner.stop_pump(&t.id);
    inner.wake(&t.id);
    Ok(ended)
}

/// Releases what a deleted sandbox holds and marks it deleted.
async fn finish_delete(inner: &Inner, s: &Sandbox) -> StoreResult<()> {
    match s.placement.as_str() {
        "host" => {
            // The conversations go; the host's working directory stays.
            if let Ok(ep) = inner.endpoint(s) {
                for t in inner.store.tasks_of(&s.id).await? {
                    if let Err(e) = inner.client.delete_conversation(&ep, &t.session_id).await {
                        tracing::debug!(sandbox = %s.id, "deleting a conversation failed: {e}");
                    }
                }
            }
        }
        _ => {
            release_process(inner, s).await;
            let dir = layout(inner, &s.id).dir;
            let removed =
                tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                })
                .await;
            if !matches!(removed, Ok(Ok(()))) {
                tracing::warn!(sandbox = %s.id, "removing the sandbox directory failed: {removed:?}");
            }
        }
    }
    inner.store.mark_sandbox_deleted(&s.id).await
}

/// Finishes deletes other instances requested on sandboxes this one owns.
pub(crate) async fn reap_deleting(inner: &Arc<Inner>) -> StoreResult<()> {
    for s in inner.store.owned_sandboxes(&inner.instance).await? {
        if s.status == status::DELETING {
            finish_delete(inner, &s).await?;
        }
    }
    Ok(())
}

/// A local sandbox's process died: the sandbox fails, so does its task.
pub(crate) async fn on_local_exit(inner: &Arc<Inner>, exited: &crate::hosts::local::Exited) {
    let Ok(Some(s)) = inner.store.sandbox_by_id(&exited.sandbox_id).await else {
        return;
    };
    if s.status == status::DELETING || s.status == status::DELETED {
        return;
    }
    let _ = inner.store.set_sandbox_status(&s.id, status::FAILED).await;
    if let Ok(running) = inner.store.running_tasks_of(&s.id).await {
        for t in running {
            let reason = format!(
                "the sandbox's agent server exited unexpectedly (code {})",
                exited.code
            );
            let _ = end_task(inner, &t, tasks::status::FAILED, 1, &reason).await;
        }
    }
}
