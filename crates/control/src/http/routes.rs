//! The route handlers, each with its OpenAPI operation (see
//! [`super::docs`]).

use super::docs::{
    AgentInfo, DeletedSandbox, EmptyBody, ErrorBody, Health, NewSandboxBody, SandboxList,
    SandboxView, SshTicket, StartTaskBody, SteerBody, TaskRefBody, TaskView,
};
use super::{body_object, caller, detached, only_fields, query_pairs, uuid_value};
use crate::error::ApiError;
use crate::grants::{AI_CHAT_USE, SANDBOXES_READ, SANDBOXES_WRITE};
use crate::service::ControlPlane;
use crate::service::sandboxes::NewSandbox;
use crate::service::tasks::{Control, check_prompt};
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use std::convert::Infallible;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

type Cp = State<ControlPlane>;
type Result<T> = std::result::Result<T, ApiError>;

/// Every route of the API, documented.
pub(super) fn routes() -> OpenApiRouter<ControlPlane> {
    use utoipa::OpenApi;
    OpenApiRouter::with_openapi(super::docs::ControlDoc::openapi())
        .routes(routes!(health))
        .routes(routes!(create_sandbox, list_sandboxes))
        .routes(routes!(get_sandbox, delete_sandbox))
        .routes(routes!(agent))
        .routes(routes!(start_task, cancel_task))
        .routes(routes!(steer))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(output))
        .routes(routes!(ssh_ticket))
}

fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

/// Whether this instance serves.
#[utoipa::path(get, path = "/health", tag = "control", operation_id = "health",
    responses((status = 200, description = "It serves", body = Health)))]
async fn health(State(cp): Cp) -> Response {
    json_response(
        StatusCode::OK,
        json!({"status": "ok", "instance": cp.instance(), "tasks_enabled": cp.config().tasks_enabled}),
    )
}

/// Creates a sandbox (`sandboxes:write`) and starts its agent server.
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes", tag = "sandboxes", operation_id = "create_sandbox", params(("tenant_id" = String, Path, description = "The tenant")), security(("bearer" = [])),
    request_body(content = Option<NewSandboxBody>, content_type = "application/json"),
    responses((status = 201, description = "Created and ready", body = SandboxView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 503, description = "No sandbox can be started", body = ErrorBody)))]
async fn create_sandbox(
    State(cp): Cp,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    let m = body_object(&body)?;
    only_fields(&m, &["name", "llm"])?;
    let name = match m.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= 200 => {
            Some(s.trim().to_string())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "name must be a string of 1 to 200 characters",
            ));
        }
    };
    let llm = match m.get("llm") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.clone()),
    };
    let v = detached(async move {
        cp.create_sandbox(
            &c,
            NewSandbox {
                name,
                llm,
                runtime: None,
            },
        )
        .await
    })
    .await?;
    Ok(json_response(StatusCode::CREATED, v))
}

/// The tenant's sandboxes (`sandboxes:read`).
#[utoipa::path(get, path = "/v1/customer/tenants/{tenant_id}/sandboxes", tag = "sandboxes", operation_id = "list_sandboxes", params(("tenant_id" = String, Path, description = "The tenant")), security(("bearer" = [])),
    responses((status = 200, description = "The sandboxes", body = SandboxList), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody)))]
async fn list_sandboxes(
    State(cp): Cp,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_READ)?;
    Ok(json_response(StatusCode::OK, cp.list_sandboxes(&c).await?))
}

/// A sandbox (`sandboxes:read`).
#[utoipa::path(get, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}", tag = "sandboxes", operation_id = "get_sandbox", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    responses((status = 200, description = "The sandbox", body = SandboxView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody)))]
async fn get_sandbox(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_READ)?;
    let s = cp.find_sandbox(&c, &sandbox_id).await?;
    Ok(json_response(StatusCode::OK, cp.sandbox_view(&s).await?))
}

/// Deletes a sandbox (`sandboxes:write`): its task is cancelled, its agent server stopped.
#[utoipa::path(delete, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}", tag = "sandboxes", operation_id = "delete_sandbox", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    responses((status = 200, description = "Deleted (or being deleted)", body = DeletedSandbox), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody)))]
async fn delete_sandbox(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    let v = detached(async move { cp.delete_sandbox(&c, &sandbox_id).await }).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// A one-time SSH ticket into a ready sandbox (`sandboxes:write`).
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/ssh/tickets", tag = "sandboxes", operation_id = "create_ssh_ticket", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    request_body(content = Option<EmptyBody>, content_type = "application/json"),
    responses((status = 201, description = "The ticket", body = SshTicket), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "The sandbox is not ready", body = ErrorBody),
        (status = 503, description = "SSH is off", body = ErrorBody)))]
async fn ssh_ticket(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    only_fields(&body_object(&body)?, &[])?;
    let v = cp.mint_ticket(&c, &sandbox_id).await?;
    Ok(json_response(StatusCode::CREATED, v))
}

/// The task capability of a sandbox's agent (`sandboxes:read`).
#[utoipa::path(get, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent", tag = "tasks", operation_id = "get_agent", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    responses((status = 200, description = "Controls, limits, current task", body = AgentInfo), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody)))]
async fn agent(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_READ)?;
    Ok(json_response(
        StatusCode::OK,
        cp.agent_info(&c, &sandbox_id).await?,
    ))
}

fn prompt_field(m: &serde_json::Map<String, Value>) -> Result<String> {
    match m.get("prompt") {
        Some(Value::String(p)) => {
            check_prompt(p)?;
            Ok(p.clone())
        }
        None | Some(Value::Null) => Err(ApiError::invalid("prompt is required")),
        Some(_) => Err(ApiError::invalid("prompt must be a string")),
    }
}

fn task_id_field(m: &serde_json::Map<String, Value>) -> Result<String> {
    match m.get("task_id") {
        None | Some(Value::Null) => Err(ApiError::invalid("task_id is required")),
        Some(Value::String(s)) => uuid_value("task_id", Some(s)),
        Some(_) => Err(ApiError::invalid("task_id must be a UUID string")),
    }
}

/// Starts the sandbox's next task (`sandboxes:write`, `ai_chat:use`).
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks", tag = "tasks", operation_id = "start_task", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    request_body(content = StartTaskBody, content_type = "application/json"),
    responses((status = 202, description = "Started", body = TaskView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Busy or not ready", body = ErrorBody),
        (status = 429, description = "The tenant's running-task limit", body = ErrorBody),
        (status = 503, description = "Task controls are off or the sandbox does not answer", body = ErrorBody)))]
async fn start_task(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    c.require(AI_CHAT_USE)?;
    cp.require_tasks_enabled()?;
    let m = body_object(&body)?;
    only_fields(&m, &["prompt"])?;
    let prompt = prompt_field(&m)?;
    let v = detached(async move { cp.start_task(&c, &sandbox_id, &prompt).await }).await?;
    Ok(json_response(StatusCode::ACCEPTED, v))
}

/// Cancels the current task (`sandboxes:write`, `ai_chat:use`, its owner).
#[utoipa::path(delete, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks", tag = "tasks", operation_id = "cancel_task",
    params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox"),
        ("task_id" = String, Query, format = Uuid, description = "The current task")), security(("bearer" = [])),
    responses((status = 200, description = "Cancelled", body = TaskView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Not the current task", body = ErrorBody),
        (status = 503, description = "The sandbox does not answer", body = ErrorBody)))]
async fn cancel_task(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    c.require(AI_CHAT_USE)?;
    let mut task_id = None;
    for (k, v) in query_pairs(query.as_deref())? {
        match k.as_str() {
            "task_id" => task_id = Some(v),
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown query parameter {other:?}"
                )));
            }
        }
    }
    let task_id = uuid_value("task_id", task_id.as_deref())?;
    let v = detached(async move { cp.cancel_task(&c, &sandbox_id, &task_id).await }).await?;
    Ok(json_response(StatusCode::OK, v))
}

async fn control(
    cp: ControlPlane,
    tenant_id: String,
    sandbox_id: String,
    headers: HeaderMap,
    body: Bytes,
    kind: &str,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    c.require(AI_CHAT_USE)?;
    cp.require_tasks_enabled()?;
    let m = body_object(&body)?;
    let control = if kind == "steer" {
        only_fields(&m, &["task_id", "prompt"])?;
        Control::Steer(prompt_field(&m)?)
    } else {
        if m.contains_key("prompt") {
            return Err(ApiError::invalid(format!("{kind} takes no prompt")));
        }
        only_fields(&m, &["task_id"])?;
        if kind == "pause" {
            Control::Pause
        } else {
            Control::Resume
        }
    };
    let task_id = task_id_field(&m)?;
    let v =
        detached(async move { cp.control_task(&c, &sandbox_id, &task_id, control).await }).await?;
    Ok(json_response(StatusCode::ACCEPTED, v))
}

/// `steer` the current task (`sandboxes:write`, `ai_chat:use`, its owner).
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/steer", tag = "tasks", operation_id = "steer_task", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    request_body(content = SteerBody, content_type = "application/json"),
    responses((status = 202, description = "Accepted", body = TaskView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Not the current task, or it has ended", body = ErrorBody),
        (status = 503, description = "Task controls are off or the sandbox does not answer", body = ErrorBody)))]
async fn steer(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "steer").await
}

/// `pause` the current task (`sandboxes:write`, `ai_chat:use`, its owner).
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/pause", tag = "tasks", operation_id = "pause_task", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    request_body(content = TaskRefBody, content_type = "application/json"),
    responses((status = 202, description = "Accepted", body = TaskView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Not the current task, or it has ended", body = ErrorBody),
        (status = 503, description = "Task controls are off or the sandbox does not answer", body = ErrorBody)))]
async fn pause(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "pause").await
}

/// `resume` the current task (`sandboxes:write`, `ai_chat:use`, its owner).
#[utoipa::path(post, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/resume", tag = "tasks", operation_id = "resume_task", params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox")), security(("bearer" = [])),
    request_body(content = TaskRefBody, content_type = "application/json"),
    responses((status = 202, description = "Accepted", body = TaskView), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Not the current task, or it has ended", body = ErrorBody),
        (status = 503, description = "Task controls are off or the sandbox does not answer", body = ErrorBody)))]
async fn resume(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "resume").await
}

/// The task's retained output from `after` on, as NDJSON (`sandboxes:write`).
#[utoipa::path(get, path = "/v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/output", tag = "tasks", operation_id = "get_task_output",
    params(("tenant_id" = String, Path, description = "The tenant"), ("sandbox_id" = String, Path, format = Uuid, description = "The sandbox"),
        ("task_id" = String, Query, format = Uuid, description = "The current task"),
        ("after" = Option<i64>, Query, minimum = 0, description = "The last `seq` read (default 0)")), security(("bearer" = [])),
    responses((status = 200, description = "stdout/stderr chunks with `seq` and base64 data, then an exit event", content_type = "application/x-ndjson", body = String), (status = 400, description = "Invalid request", body = ErrorBody), (status = 401, description = "No or an unknown credential", body = ErrorBody), (status = 403, description = "A grant is missing", body = ErrorBody), (status = 404, description = "Unknown tenant or sandbox", body = ErrorBody),
        (status = 409, description = "Not the current task", body = ErrorBody)))]
async fn output(
    State(cp): Cp,
    Path((tenant_id, sandbox_id)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_WRITE)?;
    let mut task_id = None;
    let mut after = 0i64;
    for (k, v) in query_pairs(query.as_deref())? {
        match k.as_str() {
            "task_id" => task_id = Some(v),
            "after" => {
                after = v
                    .trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| ApiError::invalid("after must be an integer of 0 or more"))?;
            }
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown query parameter {other:?}"
                )));
            }
        }
    }
    let task_id = uuid_value("task_id", task_id.as_deref())?;
    let s = cp.find_sandbox(&c, &sandbox_id).await?;
    cp.current_task(&s, &task_id).await?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(32);
    tokio::spawn(crate::tasks::reader::stream(
        cp.inner.clone(),
        task_id,
        after,
        cp.config().output_rotation,
        tx,
    ));
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok::<_, Infallible>);
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/x-ndjson"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    h.insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    Ok(resp)
}
