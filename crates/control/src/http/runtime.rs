//! The OpenHands Runtime API at `/v1/runtime`, as the reference's
//! `APIRemoteWorkspace` calls it: `POST /start`, `GET /sessions/{id}`,
//! `POST /pause`, `/resume`, `/stop`. The `X-API-Key` header carries a
//! workspace API key (or access token) of the tenant holding
//! `sandboxes:write`. Parsing only; the operations live in
//! [`crate::service::runtimes`].

use super::{body_object, detached, only_fields};
use crate::auth::{Caller, authenticate};
use crate::engines::{PullPolicy, RuntimeSpec};
use crate::error::ApiError;
use crate::grants::SANDBOXES_WRITE;
use crate::service::ControlPlane;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value};

/// Where the Runtime API is served.
pub const BASE: &str = "/v1/runtime";
/// The header carrying the caller's credential.
pub const API_KEY_HEADER: &str = "x-api-key";

type Cp = State<ControlPlane>;
type Result<T> = std::result::Result<T, ApiError>;

/// The fields `POST /start` takes (the reference client's payload).
const START_FIELDS: &[&str] = &[
    "image",
    "command",
    "working_dir",
    "environment",
    "session_id",
    "run_as_user",
    "fs_group",
    "image_pull_policy",
    "runtime_class",
    "resource_factor",
];

/// The routes of the Runtime API.
pub(super) fn routes() -> Router<ControlPlane> {
    Router::new()
        .route(&format!("{BASE}/start"), post(start))
        .route(&format!("{BASE}/sessions/{{session_id}}"), get(session))
        .route(&format!("{BASE}/pause"), post(pause))
        .route(&format!("{BASE}/resume"), post(resume))
        .route(&format!("{BASE}/stop"), post(stop))
}

/// Authenticates `X-API-Key` and requires `sandboxes:write`.
async fn caller(cp: &ControlPlane, headers: &HeaderMap) -> Result<Caller> {
    let key = headers
        .get(API_KEY_HEADER)
        .ok_or_else(|| {
            ApiError::unauthenticated("send a workspace API key in the X-API-Key header")
        })?
        .to_str()
        .map_err(|_| ApiError::unauthenticated("malformed X-API-Key header"))?
        .trim();
    if key.is_empty() {
        return Err(ApiError::unauthenticated("the X-API-Key header is empty"));
    }
    let c = authenticate(cp.store(), key).await?;
    c.require(SANDBOXES_WRITE)?;
    Ok(c)
}

fn ok(v: Value) -> Response {
    (StatusCode::OK, axum::Json(v)).into_response()
}

fn opt_string(m: &Map<String, Value>, name: &str) -> Result<Option<String>> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(_) => Err(ApiError::invalid(format!(
            "{name} must be a non-empty string"
        ))),
    }
}

fn opt_id(m: &Map<String, Value>, name: &str) -> Result<Option<u32>> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| ApiError::invalid(format!("{name} must be a non-negative integer"))),
    }
}

/// Whether `command` runs the agent server (the reference client's
/// binary or source forms, with `--host`/`--port` at most): the engine
/// runs its image's agent server itself, on an address it chooses and
/// answers as `url`.
fn is_agent_server_command(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    let rest = match words.as_slice() {
        [bin, rest @ ..] if bin.ends_with("openhands-agent-server") => rest,
        [py, "-m", "openhands.agent_server", rest @ ..] if py.ends_with("python") => rest,
        _ => return false,
    };
    let mut it = rest.iter();
    while let Some(w) = it.next() {
        match *w {
            "--port" | "--host" => {
                if it.next().is_none() {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn environment(m: &Map<String, Value>) -> Result<Vec<(String, String)>> {
    let env = match m.get("environment") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(env)) => env,
        Some(_) => {
            return Err(ApiError::invalid(
                "environment must be an object of variable names to string values",
            ));
        }
    };
    let mut out = Vec::with_capacity(env.len());
    for (k, v) in env {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(ApiError::invalid(format!(
                "environment: {k:?} is not a variable name"
            )));
        }
        let Value::String(v) = v else {
            return Err(ApiError::invalid(format!(
                "environment.{k} must be a string"
            )));
        };
        if v.contains('\0') {
            return Err(ApiError::invalid(format!(
                "environment.{k} must not contain NUL"
            )));
        }
        out.push((k.clone(), v.clone()));
    }
    Ok(out)
}

/// The session id and engine settings of a start request.
fn start_request(m: &Map<String, Value>) -> Result<(String, RuntimeSpec)> {
    only_fields(m, START_FIELDS)?;
    let session_id =
        opt_string(m, "session_id")?.ok_or_else(|| ApiError::invalid("session_id is required"))?;
    if session_id.chars().count() > 200 {
        return Err(ApiError::invalid(
            "session_id must be at most 200 characters",
        ));
    }
    if let Some(command) = opt_string(m, "command")?
        && !is_agent_server_command(&command)
    {
        return Err(ApiError::invalid(format!(
            "command {command:?} is not supported: a runtime runs its image's agent server \
             (`/usr/local/bin/openhands-agent-server [--port N]`), on a port the control plane \
             chooses and answers as `url`"
        )));
    }
    match m.get("resource_factor") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64() == Some(1) => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "resource_factor other than 1 is not supported: runtimes get the engine's \
                 resources",
            ));
        }
    }
    let image = opt_string(m, "image")?;
    let pull = match opt_string(m, "image_pull_policy")?.as_deref() {
        None => PullPolicy::default(),
        Some(_) if image.is_none() => {
            return Err(ApiError::invalid("image_pull_policy needs image"));
        }
        Some("Always") => PullPolicy::Always,
        Some("IfNotPresent") => PullPolicy::IfNotPresent,
        Some("Never") => PullPolicy::Never,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "image_pull_policy {other:?} is not one of Always, IfNotPresent, Never"
            )));
        }
    };
    let user = match (opt_id(m, "run_as_user")?, opt_id(m, "fs_group")?) {
        (None, None) => None,
        (Some(u), g) => Some((u, g.unwrap_or(u))),
        (None, Some(_)) => return Err(ApiError::invalid("fs_group needs run_as_user")),
    };
    let process_dir = opt_string(m, "working_dir")?;
    if let Some(dir) = &process_dir
        && !dir.starts_with('/')
    {
        return Err(ApiError::invalid("working_dir must be an absolute path"));
    }
    let spec = RuntimeSpec {
        image,
        pull,
        environment: environment(m)?,
        user,
        runtime_class: opt_string(m, "runtime_class")?,
        process_dir,
    };
    Ok((session_id, spec))
}

fn runtime_id(body: &Bytes) -> Result<String> {
    let m = body_object(body)?;
    only_fields(&m, &["runtime_id"])?;
    opt_string(&m, "runtime_id")?.ok_or_else(|| ApiError::invalid("runtime_id is required"))
}

async fn start(State(cp): Cp, headers: HeaderMap, body: Bytes) -> Result<Response> {
    let c = caller(&cp, &headers).await?;
    let (session_id, spec) = start_request(&body_object(&body)?)?;
    let v = detached(async move { cp.start_runtime(&c, session_id, spec).await }).await?;
    Ok(ok(v))
}

async fn session(
    State(cp): Cp,
    Path(session_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let c = caller(&cp, &headers).await?;
    Ok(ok(cp.runtime_of_session(&c, &session_id).await?))
}

async fn pause(State(cp): Cp, headers: HeaderMap, body: Bytes) -> Result<Response> {
    let c = caller(&cp, &headers).await?;
    let id = runtime_id(&body)?;
    let v = detached(async move { cp.pause_runtime(&c, &id).await }).await?;
    Ok(ok(v))
}

async fn resume(State(cp): Cp, headers: HeaderMap, body: Bytes) -> Result<Response> {
    let c = caller(&cp, &headers).await?;
    let id = runtime_id(&body)?;
    let v = detached(async move { cp.resume_runtime(&c, &id).await }).await?;
    Ok(ok(v))
}

async fn stop(State(cp): Cp, headers: HeaderMap, body: Bytes) -> Result<Response> {
    let c = caller(&cp, &headers).await?;
    let id = runtime_id(&body)?;
    let v = detached(async move { cp.stop_runtime(&c, &id).await }).await?;
    Ok(ok(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_agent_server_commands_are_accepted() {
        assert!(is_agent_server_command(
            "/usr/local/bin/openhands-agent-server --port 60000"
        ));
        assert!(is_agent_server_command(
            "/agent-server/.venv/bin/python -m openhands.agent_server --port 60000"
        ));
        assert!(!is_agent_server_command("/bin/sh -c evil"));
        assert!(!is_agent_server_command(
            "/usr/local/bin/openhands-agent-server --port"
        ));
        assert!(!is_agent_server_command(
            "/usr/local/bin/openhands-agent-server --debug"
        ));
    }

    #[test]
    fn the_reference_clients_payload_parses() {
        let body = serde_json::json!({
            "image": "img:1",
            "command": "/usr/local/bin/openhands-agent-server --port 60000",
            "working_dir": "/",
            "environment": {"A": "1"},
            "session_id": "agent-server-x",
            "run_as_user": 10001,
            "fs_group": 10001,
            "image_pull_policy": "IfNotPresent",
            "runtime_class": "sysbox-runc",
        });
        let Value::Object(m) = body else {
            unreachable!()
        };
        let (session, spec) = start_request(&m).unwrap();
        assert_eq!(session, "agent-server-x");
        assert_eq!(spec.image.as_deref(), Some("img:1"));
        assert_eq!(spec.user, Some((10001, 10001)));
        assert_eq!(spec.environment, vec![("A".into(), "1".into())]);
        assert_eq!(spec.runtime_class.as_deref(), Some("sysbox-runc"));
        assert_eq!(spec.process_dir.as_deref(), Some("/"));
        let mut bad = m.clone();
        bad.insert("resource_factor".into(), 2.into());
        assert!(
            start_request(&bad)
                .unwrap_err()
                .message
                .contains("resource_factor")
        );
        let mut bad = m.clone();
        bad.insert("gpu".into(), true.into());
        assert!(start_request(&bad).unwrap_err().message.contains("gpu"));
        let mut bad = m;
        bad.remove("image");
        assert!(
            start_request(&bad)
                .unwrap_err()
                .message
                .contains("needs image")
        );
    }
}
