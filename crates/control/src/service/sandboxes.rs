//! Sandbox lifecycle: placement on an engine, provisioning, reads,
//! deletion, re-adoption after a restart, and what happens when an engine
//! reports a sandbox gone.

use super::{ControlPlane, Inner};
use crate::auth::Caller;
use crate::engines::{self, Engine, Located, ProvisionRequest, RuntimeSpec};
use crate::error::ApiError;
use crate::secrets::new_credential;
use crate::store::sandboxes::{Placed, Sandbox, status};
use crate::store::tasks::{self, Line, Task, Writer};
use crate::store::{StoreResult, now_ms};
use crate::tasks::lines;
use crate::views;
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long a re-adopted sandbox's agent server may take to answer again
/// after a restart of the control plane (it may be busy).
const ADOPT_WAIT: Duration = Duration::from_secs(15);

/// How many sandboxes a start re-adopts at once.
const ADOPT_CONCURRENCY: usize = 8;

/// A validated sandbox-create request.
#[derive(Debug, Clone, Default)]
pub struct NewSandbox {
    /// Display name.
    pub name: Option<String>,
    /// The reference's LLM JSON for this sandbox.
    pub llm: Option<Value>,
    /// A Runtime API start: its session id and what it asks of the engine.
    pub runtime: Option<NewRuntime>,
}

/// What a Runtime API start adds to a sandbox.
#[derive(Debug, Clone)]
pub struct NewRuntime {
    /// The client's session id (one live runtime per tenant and session).
    pub session_id: String,
    /// What it asks of the engine.
    pub spec: RuntimeSpec,
}

/// The runtime spec a sandbox row was started with (plain when none).
pub(crate) fn runtime_spec(inner: &Inner, s: &Sandbox) -> Result<RuntimeSpec, StartFailure> {
    let Some(sealed) = &s.sealed_runtime else {
        return Ok(RuntimeSpec::default());
    };
    let json = inner.sealer.open(sealed)?;
    serde_json::from_str(&json).map_err(StartFailure::RuntimeSettings)
}

/// Why a sandbox was not started (recorded as its status reason).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartFailure {
    /// The row names an engine this instance does not run.
    #[error("unknown engine {0:?}")]
    UnknownEngine(Option<String>),
    /// The sealed runtime settings cannot be opened.
    #[error("{0}")]
    Unseal(#[from] crate::secrets::SecretError),
    /// The runtime settings are not a runtime spec.
    #[error("the stored runtime settings: {0}")]
    RuntimeSettings(#[source] serde_json::Error),
    /// The engine could not provision it.
    #[error("{0}")]
    Provision(#[from] crate::hosts::ProvisionError),
    /// Where it runs could not be recorded.
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
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

/// Why a sandbox of `engine` could not reach its LLM, or `None`: engines
/// that run sandboxes in containers give them a network of their own, in
/// which a loopback `base_url` (the request's `llm`, else `LLM_BASE_URL`)
/// is the container itself, not the control plane's machine.
pub fn unreachable_llm(
    engine: &str,
    llm: Option<&Value>,
    default: &crate::config::DefaultLlm,
) -> Option<String> {
    if !matches!(
        engine,
        engines::DOCKER | engines::SWARM | engines::KUBERNETES
    ) {
        return None;
    }
    let (field, url) = match llm {
        Some(llm) => ("llm.base_url", llm.get("base_url")?.as_str()?),
        None => ("LLM_BASE_URL", default.base_url.as_deref()?),
    };
    let host = url::Url::parse(url).ok()?.host()?.to_owned();
    let loopback = match &host {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        url::Host::Ipv4(ip) => ip.is_loopback() || ip.is_unspecified(),
        url::Host::Ipv6(ip) => ip.is_loopback() || ip.is_unspecified(),
    };
    loopback.then(|| {
        format!(
            "{field} {url} is a loopback address, which {engine} sandboxes cannot reach: each \
             runs in a container with its own network; serve the LLM at an address of this \
             machine the containers reach (docker sandboxes resolve host.docker.internal to \
             it) or elsewhere"
        )
    })
}

/// Provisions `s` on its engine with session key `key` and records where
/// it runs; the updated row, or why it failed (recorded too).
async fn provision(inner: &Inner, s: &Sandbox, key: &str) -> Result<Sandbox, StartFailure> {
    let Some(engine) = inner.engines.of(s) else {
        let why = StartFailure::UnknownEngine(s.engine.clone());
        let _ = inner
            .store
            .set_sandbox_down(&s.id, status::FAILED, &why.to_string())
            .await;
        return Err(why);
    };
    let runtime = match runtime_spec(inner, s) {
        Ok(r) => r,
        Err(why) => {
            let _ = inner
                .store
                .set_sandbox_down(&s.id, status::FAILED, &why.to_string())
                .await;
            return Err(why);
        }
    };
    let req = ProvisionRequest {
        sandbox_id: s.id.clone(),
        key: key.to_string(),
        runtime,
    };
    match engine.provision(&req).await {
        Ok(p) => {
            let sealed = inner.sealer.seal(&p.key);
            let host_id = (engine.name() == engines::HOST).then_some(p.engine_id.as_str());
            let placed = Placed {
                engine_id: &p.engine_id,
                url: &p.url,
                sealed_key: &sealed,
                working_dir: &p.working_dir,
                host_id,
            };
            if let Err(e) = inner.store.set_sandbox_placed(&s.id, &placed).await {
                engine.release(s).await;
                return Err(e.into());
            }
            let mut placed_row = s.clone();
            placed_row.engine_id = Some(p.engine_id.clone());
            placed_row.url = Some(p.url);
            placed_row.sealed_key = Some(sealed);
            placed_row.working_dir = p.working_dir;
            placed_row.host_id = host_id.map(str::to_string);
            placed_row.status = status::READY.into();
            placed_row.status_reason = None;
            Ok(placed_row)
        }
        Err(e) => {
            let why = e.to_string();
            tracing::warn!(sandbox = %s.id, "provisioning failed: {why}");
            let _ = inner
                .store
                .set_sandbox_down(&s.id, status::FAILED, &why)
                .await;
            Err(e.into())
        }
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
        let placed = self.new_sandbox(caller, req).await?;
        self.sandbox_view(&placed).await
    }

    /// Creates and provisions a sandbox (see [`ControlPlane::create_sandbox`]);
    /// the placed row. A runtime whose session another request started at
    /// the same moment is that request's row (maybe still starting).
    pub(crate) async fn new_sandbox(
        &self,
        caller: &Caller,
        req: NewSandbox,
    ) -> Result<Sandbox, ApiError> {
        let inner = &self.inner;
        let llm_model = match &req.llm {
            Some(llm) => Some(validate_llm(llm)?),
            None => None,
        };
        // A runtime's client configures the LLM of each conversation.
        if llm_model.is_none() && req.runtime.is_none() && inner.config.llm.to_json().is_none() {
            return Err(ApiError::invalid(
                "no LLM: the control plane has no LLM_MODEL configured, so the request must name one in `llm`",
            ));
        }
        // Registered hosts take every sandbox while one is enabled (a
        // healthy one, else the create fails: never silently local).
        let engine = if inner.store.any_enabled_host().await? {
            engines::HOST
        } else {
            inner.config.sandbox_mode.as_str()
        };
        if req.runtime.is_none()
            && let Some(why) = unreachable_llm(engine, req.llm.as_ref(), &inner.config.llm)
        {
            return Err(ApiError::invalid(why));
        }
        if let Some(rt) = &req.runtime {
            let Some(e) = inner.engines.get(engine) else {
                return Err(ApiError::internal(format!("unknown engine {engine}")));
            };
            e.check_runtime(&rt.spec)
                .await
                .map_err(|why| ApiError::invalid(format!("{why} (sandbox engine: {engine})")))?;
        }
        let id = uuid::Uuid::new_v4().to_string();
        // The engine says where the agent works once it placed the sandbox.
        let working_dir = match engine {
            engines::LOCAL => inner.engines.local.layout(&id).workspace(),
            engines::DOCKER => inner.engines.docker.layout(&id).workspace(),
            engines::SWARM => engines::swarm::WORKSPACE.into(),
            engines::KUBERNETES => engines::kubernetes::WORKSPACE.into(),
            _ => std::path::PathBuf::new(),
        };
        let s = Sandbox {
            id: id.clone(),
            tenant_id: caller.tenant_id.clone(),
            name: req
                .name
                .clone()
                .unwrap_or_else(|| format!("sandbox-{}", &id[..8])),
            placement: engine.to_string(),
            engine: Some(engine.to_string()),
            engine_id: None,
            status_reason: None,
            host_id: None,
            owner_instance: inner.instance.clone(),
            url: None,
            sealed_key: None,
            working_dir: working_dir.to_string_lossy().into_owned(),
            sealed_llm: req.llm.as_ref().map(|l| inner.sealer.seal(&l.to_string())),
            llm_model,
            status: status::STARTING.to_string(),
            current_task_id: None,
            task_busy: 0,
            created_by: caller.user_id.clone(),
            created_at: now_ms(),
            deleted_at: None,
            runtime_session: req.runtime.as_ref().map(|r| r.session_id.clone()),
            sealed_runtime: match &req.runtime {
                Some(r) => Some(
                    inner
                        .sealer
                        .seal(&serde_json::to_string(&r.spec).map_err(ApiError::internal)?),
                ),
                None => None,
            },
        };
        if let Err(e) = inner.store.insert_sandbox(&s).await {
            // Two starts of one session: the other one's runtime.
            if let Some(rt) = &req.runtime
                && let Some(other) = inner
                    .store
                    .runtime_by_session(&caller.tenant_id, &rt.session_id)
                    .await?
            {
                return Ok(other);
            }
            return Err(e.into());
        }
        if engine == engines::LOCAL {
            self.refuse_unconfined_sharing(&s).await?;
        }
        let key = new_credential("ohs_").map_err(ApiError::internal)?;
        match provision(inner, &s, &key).await {
            Ok(placed) => Ok(placed),
            Err(why) => Err(ApiError::sandboxes_unavailable(format!(
                "the sandbox could not be started: {why}"
            ))),
        }
    }

    /// Where local sandboxes cannot be confined, they are kept to one
    /// tenant unless `OH_CONTROL_ALLOW_UNCONFINED` accepts more: a new
    /// local sandbox `s` (already inserted, so two tenants racing both see
    /// each other) of a second tenant is withdrawn and refused.
    async fn refuse_unconfined_sharing(&self, s: &Sandbox) -> Result<(), ApiError> {
        let inner = &self.inner;
        let Some(why) = inner.engines.local.procs().confinement().unavailable() else {
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
        if releases_here(inner, &s) {
            finish_delete(inner, &s).await?;
            Ok(serde_json::json!({"id": s.id, "status": status::DELETED}))
        } else {
            Ok(serde_json::json!({"id": s.id, "status": status::DELETING}))
        }
    }

    /// After a start: finds every sandbox this instance provisioned on
    /// its engine again. One that runs is re-adopted as it is (its running
    /// tasks go on; their forwarding resumes where it stopped); one its
    /// engine reports gone is provisioned again and its running task fails
    /// saying so; deletes left unfinished are finished.
    pub(crate) async fn adopt_owned(&self) {
        let inner = &self.inner;
        let owned = match inner.store.live_sandboxes().await {
            Ok(all) => all
                .into_iter()
                .filter(|s| s.owner_instance == inner.instance),
            Err(e) => {
                tracing::warn!("listing owned sandboxes failed: {e}");
                return;
            }
        };
        // Each waits on its engine and agent server: several at once.
        futures::stream::iter(owned)
            .for_each_concurrent(ADOPT_CONCURRENCY, |s| async move {
                if s.status == status::DELETING {
                    if let Err(e) = finish_delete(inner, &s).await {
                        tracing::warn!(sandbox = %s.id, "finishing a delete failed: {e}");
                    }
                    return;
                }
                adopt(inner, &s).await;
            })
            .await;
    }
}

/// Re-adopts one sandbox this instance provisioned (see
/// [`ControlPlane::adopt_owned`]).
async fn adopt(inner: &Arc<Inner>, s: &Sandbox) {
    let Some(engine) = inner.engines.of(s) else {
        return;
    };
    // A paused runtime stays frozen until it is resumed.
    if s.status == status::PAUSED {
        return;
    }
    let Some(Ok(key)) = s.sealed_key.as_deref().map(|k| inner.sealer.open(k)) else {
        if s.status == status::STARTING {
            // What the engine made before the restart cut it short goes.
            engine.release(s).await;
            let _ = inner
                .store
                .set_sandbox_down(
                    &s.id,
                    status::FAILED,
                    "the control plane restarted while provisioning it",
                )
                .await;
        }
        return;
    };
    let mut found = engine.locate(s, &key).await;
    if let (Located::Unknown(_), Some(url)) = (&found, &s.url) {
        // Its process or container runs: give a busy server time to answer.
        let ep = crate::agent_client::Endpoint {
            url: url.clone(),
            key: key.clone(),
        };
        if inner.client.wait_ready(&ep, ADOPT_WAIT).await.is_ok() {
            found = engine.locate(s, &key).await;
        }
    }
    match found {
        Located::Running { url, engine_id } => {
            tracing::info!(sandbox = %s.id, engine = engine.name(), "re-adopted a running sandbox");
            if let Err(e) = inner
                .store
                .set_sandbox_located(&s.id, &engine_id, &url)
                .await
            {
                tracing::warn!(sandbox = %s.id, "recording a re-adopted sandbox failed: {e}");
            }
        }
        Located::Unknown(why) => {
            tracing::warn!(sandbox = %s.id, "cannot tell whether the sandbox runs: {why}");
        }
        Located::Replacing(why) => mark_replacing(inner, s, &why).await,
        Located::Gone(why) => {
            tracing::warn!(sandbox = %s.id, "the sandbox is gone ({why}); provisioning it again");
            if let Ok(running) = inner.store.running_tasks_of(&s.id).await {
                let reason = format!(
                    "the sandbox's agent server was gone when the control plane restarted \
                     ({why}); the sandbox was started again, this task's work is lost"
                );
                for t in running {
                    let _ = end_task(inner, &t, tasks::status::FAILED, 1, &reason).await;
                }
            }
            engine.release(s).await;
            let _ = provision(inner, s, &key).await;
        }
    }
}

/// Removes what the docker and swarm engines run for this deployment that
/// no sandbox row claims (left by a crash between its creation and the
/// database write, or by a removal that failed). Engines are listed before
/// the rows are read, and a row is written before its engine makes
/// anything, so a sandbox being provisioned is never taken for a stray.
/// Only engines that are configured or hold a live sandbox are asked.
pub(crate) async fn remove_strays(inner: &Inner) {
    let mode = inner.config.sandbox_mode.as_str();
    let live = match inner.store.live_sandboxes().await {
        Ok(live) => live,
        Err(e) => {
            tracing::warn!("listing sandboxes to find strays failed: {e}");
            return;
        }
    };
    let engines: [&dyn Engine; 2] = [&*inner.engines.docker, &*inner.engines.swarm];
    for engine in engines {
        let name = engine.name();
        let used = mode == name || live.iter().any(|s| s.engine.as_deref() == Some(name));
        if !used {
            continue;
        }
        let listed = match engine.list().await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!("listing the {name} engine's sandboxes failed: {e}");
                continue;
            }
        };
        if listed.is_empty() {
            continue;
        }
        // Read after listing: a row made since then claims its sandbox.
        let claimed: std::collections::HashSet<String> = match inner.store.live_sandboxes().await {
            Ok(rows) => rows.into_iter().map(|s| s.id).collect(),
            Err(e) => {
                tracing::warn!("listing sandboxes to find strays failed: {e}");
                return;
            }
        };
        for id in listed.iter().filter(|id| !claimed.contains(*id)) {
            match engine.remove_stray(id).await {
                Ok(()) => tracing::warn!(
                    sandbox = %id,
                    engine = name,
                    "removed a stray sandbox no row claims"
                ),
                Err(e) => tracing::warn!(sandbox = %id, "removing a stray sandbox failed: {e}"),
            }
        }
    }
}

/// Whether this instance releases `s` (its engine reaches it from here).
fn releases_here(inner: &Inner, s: &Sandbox) -> bool {
    inner
        .engines
        .of(s)
        .is_some_and(|e| e.reaches(&s.owner_instance))
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
    end_task_as(inner, t, status, exit_code, reason, Writer::Control).await
}

/// [`end_task`] as `writer` (a forwarder ends its task only while it holds
/// the lease).
pub(crate) async fn end_task_as(
    inner: &Inner,
    t: &Task,
    status: &str,
    exit_code: i64,
    reason: &str,
    writer: Writer,
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
                Line::stderr(lines::diagnostic(reason)),
                Line::stdout(lines::task_error(&t.id, code, reason)),
                Line::stdout(lines::task_status(&t.id, status, Some(exit_code))),
            ],
            inner.retention(),
            writer,
        )
        .await?;
    inner.stop_pump(&t.id);
    inner.wake(&t.id);
    Ok(ended)
}

/// Releases what a deleted sandbox holds and marks it deleted.
pub(crate) async fn finish_delete(inner: &Inner, s: &Sandbox) -> StoreResult<()> {
    if let Some(engine) = inner.engines.of(s) {
        engine.release(s).await;
    }
    let has_dir = s.placement == engines::LOCAL || s.placement == engines::DOCKER;
    if has_dir && s.owner_instance == inner.instance {
        let dir = inner.engines.local.layout(&s.id).dir;
        let removed = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await;
        if !matches!(removed, Ok(Ok(()))) {
            tracing::warn!(sandbox = %s.id, "removing the sandbox directory failed: {removed:?}");
        }
    }
    inner.store.mark_sandbox_deleted(&s.id).await
}

/// Finishes deletes other instances requested on sandboxes this one
/// releases.
pub(crate) async fn reap_deleting(inner: &Arc<Inner>) -> StoreResult<()> {
    for s in inner.store.owned_sandboxes(&inner.instance).await? {
        if s.status == status::DELETING && releases_here(inner, &s) {
            finish_delete(inner, &s).await?;
        }
    }
    Ok(())
}

/// The engine reports `s` gone: it becomes `lost` and its running task
/// ends with a `task_error` saying why.
pub(crate) async fn mark_lost(inner: &Inner, s: &Sandbox, why: &str) {
    match inner.store.set_sandbox_down(&s.id, status::LOST, why).await {
        Ok(true) => tracing::warn!(sandbox = %s.id, "the sandbox is lost: {why}"),
        Ok(false) => return,
        Err(e) => {
            tracing::warn!(sandbox = %s.id, "recording a lost sandbox failed: {e}");
            return;
        }
    }
    if let Ok(running) = inner.store.running_tasks_of(&s.id).await {
        let reason = format!("the sandbox is lost: {why}");
        for t in running {
            let _ = end_task(inner, &t, tasks::status::FAILED, 1, &reason).await;
        }
    }
}

/// The engine runs `s` again elsewhere (its node was lost): its agent
/// server and the work of its running task are gone, so the task ends
/// with a `task_error` naming why; the sandbox is `starting` until it
/// answers at its new endpoint.
pub(crate) async fn mark_replacing(inner: &Inner, s: &Sandbox, why: &str) {
    match inner
        .store
        .set_sandbox_down(&s.id, status::STARTING, why)
        .await
    {
        Ok(true) => tracing::warn!(sandbox = %s.id, "the sandbox is placed again: {why}"),
        Ok(false) => return,
        Err(e) => {
            tracing::warn!(sandbox = %s.id, "recording a sandbox placed again failed: {e}");
            return;
        }
    }
    fail_running(
        inner,
        s,
        &format!("the sandbox's agent server was lost: {why}; the engine runs the sandbox again"),
    )
    .await;
}

/// The engine runs `s` (again) at `url`: it is ready there. A running task
/// of an agent server it no longer runs at the recorded endpoint fails.
pub(crate) async fn mark_running(inner: &Inner, s: &Sandbox, url: &str, engine_id: &str) {
    if let Some(old) = s.url.as_deref().filter(|old| *old != url) {
        fail_running(
            inner,
            s,
            &format!(
                "the sandbox was moved from {old} to {url} by its engine; this task's work is lost"
            ),
        )
        .await;
    }
    match inner.store.set_sandbox_located(&s.id, engine_id, url).await {
        Ok(()) => tracing::info!(sandbox = %s.id, %url, "the sandbox answers"),
        Err(e) => tracing::warn!(sandbox = %s.id, "recording where the sandbox runs failed: {e}"),
    }
}

async fn fail_running(inner: &Inner, s: &Sandbox, reason: &str) {
    if let Ok(running) = inner.store.running_tasks_of(&s.id).await {
        for t in running {
            let _ = end_task(inner, &t, tasks::status::FAILED, 1, reason).await;
        }
    }
}

/// A local sandbox's process died: the sandbox is lost, its task fails.
pub(crate) async fn on_local_exit(inner: &Arc<Inner>, exited: &crate::hosts::local::Exited) {
    let Ok(Some(s)) = inner.store.sandbox_by_id(&exited.sandbox_id).await else {
        return;
    };
    if s.status == status::DELETING || s.status == status::DELETED {
        return;
    }
    let why = format!(
        "its agent server exited unexpectedly (code {})",
        exited.code
    );
    mark_lost(inner, &s, &why).await;
}

#[cfg(test)]
mod tests {
    use super::unreachable_llm;
    use crate::config::DefaultLlm;
    use serde_json::json;

    #[test]
    fn a_loopback_llm_is_refused_for_container_engines_only() {
        let default = DefaultLlm {
            model: Some("m".into()),
            base_url: Some("http://127.0.0.1:4000/v1".into()),
            ..DefaultLlm::default()
        };
        let why = unreachable_llm("docker", None, &default).unwrap();
        assert!(
            why.starts_with("LLM_BASE_URL http://127.0.0.1:4000/v1"),
            "{why}"
        );
        assert_eq!(unreachable_llm("local", None, &default), None);
        assert_eq!(unreachable_llm("host", None, &default), None);
        for url in [
            "http://localhost:1/v1",
            "http://api.localhost/v1",
            "http://[::1]:8/v1",
            "http://0.0.0.0:8/v1",
            "http://127.8.9.1/v1",
        ] {
            let llm = json!({"model": "m", "base_url": url});
            let why = unreachable_llm("swarm", Some(&llm), &default).unwrap();
            assert!(why.starts_with("llm.base_url "), "{why}");
        }
        for url in ["http://172.17.0.1:4000/v1", "https://api.example.com/v1"] {
            let llm = json!({"model": "m", "base_url": url});
            assert_eq!(
                unreachable_llm("docker", Some(&llm), &default),
                None,
                "{url}"
            );
        }
        // The request's own LLM without a base_url: the provider's default.
        let llm = json!({"model": "m"});
        assert_eq!(unreachable_llm("kubernetes", Some(&llm), &default), None);
    }
}
