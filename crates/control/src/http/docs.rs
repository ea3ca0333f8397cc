//! The API's OpenAPI document (`/openapi.json`) and its interactive docs
//! (`/docs`, Swagger UI compiled into the binary; `/redoc` redirects
//! there). The handlers of [`super::routes`] carry their operations; the
//! types here describe the bodies they read and answer (documentation
//! only: the handlers parse and build JSON themselves, and the schemathesis
//! run of `compat/control_fuzz.sh` checks the answers against them).

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_swagger_ui::SwaggerUi;

/// Name of the bearer security scheme in the document.
pub const BEARER: &str = "bearer";

struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut http = Http::new(HttpAuthScheme::Bearer);
        http.description =
            Some("A customer access token (`oht_…`) or a workspace API key (`ohk_…`)".to_string());
        components.add_security_scheme(BEARER, SecurityScheme::Http(http));
    }
}

/// The document's header; the paths come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "OpenHands task control",
        description = "Tenants' sandboxes, task controls and NDJSON task output (spec 003)."
    ),
    modifiers(&BearerScheme)
)]
pub struct ControlDoc;

/// Routes serving `api`: `/openapi.json`, `/docs` and `/redoc`.
pub fn router<S: Clone + Send + Sync + 'static>(api: utoipa::openapi::OpenApi) -> Router<S> {
    let swagger: Router<S> = SwaggerUi::new("/docs").url("/openapi.json", api).into();
    swagger.route(
        "/redoc",
        get(|| async {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(header::LOCATION, "/docs/")],
            )
                .into_response()
        }),
    )
}

/// An error answer.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// A stable code and an explanation.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable code (`permission_required`, `sandbox_not_found`, …).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}

/// `GET /health`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// This instance's id.
    pub instance: String,
    /// Whether task controls are on.
    pub tasks_enabled: bool,
}

/// Body of `POST …/sandboxes` (every field optional; others refused).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSandboxBody {
    /// A name of 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200, nullable)]
    pub name: Option<String>,
    /// The sandbox's own LLM (`model`, `api_key`, `base_url`, …) instead
    /// of the control plane's.
    #[schema(nullable)]
    pub llm: Option<serde_json::Map<String, Value>>,
}

/// Body of `POST …/agent/tasks`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartTaskBody {
    /// A nonblank prompt of at most 8192 UTF-8 bytes.
    #[schema(min_length = 1)]
    pub prompt: String,
}

/// Body of `POST …/agent/tasks/steer`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SteerBody {
    /// The current task.
    #[schema(format = Uuid)]
    pub task_id: String,
    /// A nonblank prompt of at most 8192 UTF-8 bytes.
    #[schema(min_length = 1)]
    pub prompt: String,
}

/// Body of `POST …/agent/tasks/pause` and `…/resume` (no prompt).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRefBody {
    /// The current task.
    #[schema(format = Uuid)]
    pub task_id: String,
}

/// Body of `POST …/ssh/tickets`: an empty object.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}

/// A task.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskView {
    /// Task id.
    pub id: String,
    /// The agent server's conversation.
    pub session_id: String,
    /// The output stream's id.
    pub stream_id: String,
    /// `queued`, `running`, `paused`, `finished`, `failed`, `cancelled`…
    pub status: String,
    /// Its sandbox.
    pub sandbox_id: String,
    /// The user who started it.
    pub owner_user_id: String,
    /// Whether it has ended.
    pub ended: bool,
    /// Its exit code once ended.
    #[schema(nullable)]
    pub exit_code: Option<i64>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, once ended.
    #[schema(nullable)]
    pub ended_at: Option<String>,
}

/// The LLM a sandbox's tasks use.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SandboxLlm {
    /// The model.
    #[schema(nullable)]
    pub model: Option<String>,
    /// `sandbox` (its own) or `control_plane`.
    pub source: String,
}

/// A sandbox.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SandboxView {
    /// Sandbox id.
    pub id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// Its name.
    #[schema(nullable)]
    pub name: Option<String>,
    /// `starting`, `ready`, `lost`, `failed`, `deleting`, `deleted`.
    pub status: String,
    /// Where it runs (`local`, `docker`, `swarm`, `host`).
    pub placement: String,
    /// Its engine.
    pub engine: String,
    /// Why it has its status.
    #[schema(nullable)]
    pub status_reason: Option<String>,
    /// The registered host it runs on.
    #[schema(nullable)]
    pub host_id: Option<String>,
    /// Its LLM.
    pub llm: SandboxLlm,
    /// The user who created it.
    pub created_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// Its current task.
    #[schema(nullable)]
    pub current_task: Option<TaskView>,
}

/// `GET …/sandboxes`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SandboxList {
    /// The tenant's sandboxes.
    pub sandboxes: Vec<SandboxView>,
}

/// Task limits of a sandbox's agent.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AgentLimits {
    /// Largest prompt.
    pub max_prompt_bytes: i64,
    /// Largest event before it becomes a notice.
    pub max_event_bytes: i64,
    /// Output retained per task.
    pub output_retention_bytes: i64,
    /// When an output response ends for a reconnect.
    pub reader_rotation_seconds: f64,
    /// The tenant's running-task limit.
    pub max_running_tasks: i64,
    /// Its running tasks.
    pub running_tasks: i64,
}

/// `GET …/agent`: the task capability of a sandbox.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AgentInfo {
    /// The sandbox.
    pub sandbox_id: String,
    /// Whether task controls are on.
    pub tasks_enabled: bool,
    /// The controls available.
    pub controls: Vec<String>,
    /// Limits.
    pub limits: AgentLimits,
    /// Its current task.
    #[schema(nullable)]
    pub current_task: Option<TaskView>,
}

/// `POST …/ssh/tickets`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SshTicket {
    /// The one-time ticket (the SSH password).
    pub ticket: String,
    /// The relay's host.
    pub host: String,
    /// The relay's port.
    pub port: i64,
    /// The SSH user (the sandbox id).
    pub user: String,
    /// RFC 3339.
    #[schema(nullable)]
    pub expires_at: Option<String>,
}

/// `DELETE …/sandboxes/{sandbox_id}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeletedSandbox {
    /// Sandbox id.
    pub id: String,
    /// `deleted`, or `deleting` while its owner instance finishes.
    pub status: String,
}
