//! The route handlers.

use super::{body_object, caller, detached, only_fields, query_pairs, uuid_value};
use crate::error::ApiError;
use crate::grants::{AI_CHAT_USE, SANDBOXES_READ, SANDBOXES_WRITE};
use crate::service::ControlPlane;
use crate::service::sandboxes::NewSandbox;
use crate::service::tasks::{Control, check_prompt};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use std::convert::Infallible;

type Cp = State<ControlPlane>;
type Result<T> = std::result::Result<T, ApiError>;

const BASE: &str = "/v1/customer/tenants/{tenant_id}/sandboxes";

/// Every route of the API.
pub(super) fn routes() -> Router<ControlPlane> {
    let sandbox = format!("{BASE}/{{sandbox_id}}");
    Router::new()
        .route("/health", get(health))
        .route(BASE, post(create_sandbox).get(list_sandboxes))
        .route(&sandbox, get(get_sandbox).delete(delete_sandbox))
        .route(&format!("{sandbox}/agent"), get(agent))
        .route(
            &format!("{sandbox}/agent/tasks"),
            post(start_task).delete(cancel_task),
        )
        .route(&format!("{sandbox}/agent/tasks/steer"), post(steer))
        .route(&format!("{sandbox}/agent/tasks/pause"), post(pause))
        .route(&format!("{sandbox}/agent/tasks/resume"), post(resume))
        .route(&format!("{sandbox}/agent/tasks/output"), get(output))
        .route(&format!("{sandbox}/ssh/tickets"), post(ssh_ticket))
}

fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

async fn health(State(cp): Cp) -> Response {
    json_response(
        StatusCode::OK,
        json!({"status": "ok", "instance": cp.instance(), "tasks_enabled": cp.config().tasks_enabled}),
    )
}

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

async fn list_sandboxes(
    State(cp): Cp,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers, &tenant_id).await?;
    c.require(SANDBOXES_READ)?;
    Ok(json_response(StatusCode::OK, cp.list_sandboxes(&c).await?))
}

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

async fn steer(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "steer").await
}

async fn pause(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "pause").await
}

async fn resume(
    State(cp): Cp,
    Path((t, s)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    control(cp, t, s, headers, body, "resume").await
}

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
