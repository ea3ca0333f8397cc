//! `/api/canvas-extensions/*`: install, list, enable/disable, uninstall,
//! the backend lifecycle and the bundle/icon files of canvas extensions,
//! with the reference's shapes, messages and status codes. The work is
//! done by `service::canvas`.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::canvas::backend::{BackendLogs, BackendStatus};
use crate::service::canvas::{CanvasError, InstalledCanvasExtension};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::conversations::loc;
use openhands_protocol::validation::ValidationIssue;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// The reference's pattern of extension names in paths.
pub const NAME_PATTERN: &str = "^[a-z0-9]+(?:-[a-z0-9]+)*$";
/// Default and largest `limit_bytes` of the logs.
const LOGS_DEFAULT: i64 = 64 * 1024;
const LOGS_MAX: i64 = 256 * 1024;

impl From<CanvasError> for ApiError {
    fn from(e: CanvasError) -> Self {
        match e {
            CanvasError::BadSource(m) => ApiError::bad_request(m),
            CanvasError::NotFound(m) => ApiError::not_found_msg(m),
            CanvasError::Conflict(m) => ApiError::conflict(m),
            CanvasError::Invalid(m) => ApiError::unprocessable(m),
            CanvasError::Internal(m) => ApiError::internal(m),
        }
    }
}

/// Request body for installing a canvas extension.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InstallCanvasExtensionRequest {
    /// Canvas extension source - git URL, GitHub shorthand, or local path.
    pub source: String,
    /// Optional branch, tag, or commit to install.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Subdirectory path within the repository (for monorepos).
    #[serde(default)]
    pub repo_path: Option<String>,
    /// If true, overwrite existing installation.
    #[serde(default)]
    pub force: bool,
}

/// The list of installed canvas extensions.
#[derive(Debug, Serialize, ToSchema)]
pub struct InstalledCanvasExtensionsListResponse {
    /// Every installed extension.
    pub canvas_extensions: Vec<InstalledCanvasExtension>,
}

/// Request body for enabling or disabling an extension.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateCanvasExtensionStateRequest {
    /// The new state.
    pub enabled: bool,
}

/// Answer of an enable/disable.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdateCanvasExtensionStateResponse {
    /// Extension name.
    pub name: String,
    /// The new state.
    pub enabled: bool,
}

/// Answer of an uninstall.
#[derive(Debug, Serialize, ToSchema)]
pub struct UninstallCanvasExtensionResponse {
    /// What happened.
    pub message: String,
}

/// Explicit approval of one exact installed revision.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BackendRevisionRequest {
    /// The revision (from the backend status).
    pub revision: String,
}

/// Query of the logs route.
#[derive(Debug, Deserialize)]
pub struct LogsQuery {
    limit_bytes: Option<i64>,
}

/// `name` checked against the path parameter's constraints.
pub fn checked_name(name: String) -> Result<String, ApiError> {
    let l = || loc(&["path", "extension_name"]);
    let issue = if name.is_empty() {
        Some(
            ValidationIssue::new(
                "string_too_short",
                l(),
                "String should have at least 1 character",
                json!(name),
            )
            .with_ctx(json!({"min_length": 1})),
        )
    } else if name.chars().count() > 255 {
        Some(
            ValidationIssue::new(
                "string_too_long",
                l(),
                "String should have at most 255 characters",
                json!(name),
            )
            .with_ctx(json!({"max_length": 255})),
        )
    } else if !openhands_sdk::installed::valid_name(&name) {
        Some(ValidationIssue::pattern_mismatch(
            l(),
            json!(name),
            NAME_PATTERN,
        ))
    } else {
        None
    };
    match issue {
        Some(i) => Err(ApiError::validation(vec![i])),
        None => Ok(name),
    }
}

fn non_empty(value: &str, field: &str) -> Result<(), ApiError> {
    if value.is_empty() {
        return Err(ApiError::validation(vec![
            ValidationIssue::new(
                "string_too_short",
                loc(&["body", field]),
                "String should have at least 1 character",
                json!(value),
            )
            .with_ctx(json!({"min_length": 1})),
        ]));
    }
    Ok(())
}

/// All canvas-extension routes (relative to `/api`).
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(install_canvas_extension))
        .routes(routes!(list_installed_canvas_extensions))
        .routes(routes!(
            get_installed_canvas_extension,
            set_canvas_extension_enabled,
            uninstall_canvas_extension
        ))
        .routes(routes!(get_canvas_extension_backend_status))
        .routes(routes!(prepare_canvas_extension_backend))
        .routes(routes!(start_canvas_extension_backend))
        .routes(routes!(stop_canvas_extension_backend))
        .routes(routes!(get_canvas_extension_backend_logs))
        .routes(routes!(delete_canvas_extension_backend_data))
        .routes(routes!(get_canvas_extension_bundle))
        .routes(routes!(get_canvas_extension_icon))
}

/// Install a canvas extension from a git URL, GitHub shorthand, or local path.
/// A fresh install always lands disabled.
#[utoipa::path(post, path = "/canvas-extensions/install", tag = "Canvas Extensions",
    operation_id = "install_canvas_extension_endpoint_api_canvas_extensions_install_post",
    security(("APIKeyHeader" = [])),
    request_body = InstallCanvasExtensionRequest,
    responses((status = 200, description = "Successful Response", body = InstalledCanvasExtension),
              (status = 400, description = "Could not read canvas extension source"),
              (status = 409, description = "Canvas extension already installed (use force=true)"),
              (status = 422, description = "Invalid canvas extension (bad manifest, etc.)")))]
pub async fn install_canvas_extension(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<InstallCanvasExtensionRequest>,
) -> Result<Json<InstalledCanvasExtension>, ApiError> {
    non_empty(&request.source, "source")?;
    Ok(Json(
        state
            .canvas
            .install(
                request.source,
                request.git_ref,
                request.repo_path,
                request.force,
            )
            .await?,
    ))
}

/// List all installed canvas extensions (enabled and disabled).
#[utoipa::path(get, path = "/canvas-extensions/installed", tag = "Canvas Extensions",
    operation_id = "list_installed_canvas_extensions_endpoint_api_canvas_extensions_installed_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = InstalledCanvasExtensionsListResponse)))]
pub async fn list_installed_canvas_extensions(
    State(state): State<SharedState>,
) -> Result<Json<InstalledCanvasExtensionsListResponse>, ApiError> {
    Ok(Json(InstalledCanvasExtensionsListResponse {
        canvas_extensions: state.canvas.list().await?,
    }))
}

/// Get information about a specific installed canvas extension.
#[utoipa::path(get, path = "/canvas-extensions/installed/{extension_name}", tag = "Canvas Extensions",
    operation_id = "get_installed_canvas_extension_endpoint_api_canvas_extensions_installed__extension_name__get",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = InstalledCanvasExtension),
              (status = 404, description = "Canvas extension not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_installed_canvas_extension(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<InstalledCanvasExtension>, ApiError> {
    let name = checked_name(name)?;
    Ok(Json(state.canvas.get(name).await?))
}

/// Enable or disable an installed canvas extension.
#[utoipa::path(patch, path = "/canvas-extensions/installed/{extension_name}", tag = "Canvas Extensions",
    operation_id = "set_canvas_extension_enabled_endpoint_api_canvas_extensions_installed__extension_name__patch",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    request_body = UpdateCanvasExtensionStateRequest,
    responses((status = 200, description = "Successful Response", body = UpdateCanvasExtensionStateResponse),
              (status = 404, description = "Canvas extension not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn set_canvas_extension_enabled(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<UpdateCanvasExtensionStateRequest>,
) -> Result<Json<UpdateCanvasExtensionStateResponse>, ApiError> {
    let name = checked_name(name)?;
    state
        .canvas
        .set_enabled(name.clone(), request.enabled)
        .await?;
    Ok(Json(UpdateCanvasExtensionStateResponse {
        name,
        enabled: request.enabled,
    }))
}

/// Uninstall a canvas extension by name while retaining backend data.
#[utoipa::path(delete, path = "/canvas-extensions/installed/{extension_name}", tag = "Canvas Extensions",
    operation_id = "uninstall_canvas_extension_endpoint_api_canvas_extensions_installed__extension_name__delete",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = UninstallCanvasExtensionResponse),
              (status = 404, description = "Canvas extension not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn uninstall_canvas_extension(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<UninstallCanvasExtensionResponse>, ApiError> {
    let name = checked_name(name)?;
    let message = state.canvas.uninstall(name).await?;
    Ok(Json(UninstallCanvasExtensionResponse { message }))
}

/// Probe the optional backend lifecycle state.
#[utoipa::path(get, path = "/canvas-extensions/installed/{extension_name}/backend", tag = "Canvas Extensions",
    operation_id = "get_canvas_extension_backend_status_endpoint_api_canvas_extensions_installed__extension_name__backend_get",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = BackendStatus),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_canvas_extension_backend_status(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<BackendStatus>, ApiError> {
    let name = checked_name(name)?;
    Ok(Json(state.canvas.backend_status(&name).await))
}

/// Verify and prepare the immutable artifact for an exact revision.
#[utoipa::path(post, path = "/canvas-extensions/installed/{extension_name}/backend/prepare", tag = "Canvas Extensions",
    operation_id = "prepare_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_prepare_post",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    request_body = BackendRevisionRequest,
    responses((status = 200, description = "Successful Response", body = BackendStatus),
              (status = 409, description = "Revision or checksum approval conflict"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn prepare_canvas_extension_backend(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<BackendRevisionRequest>,
) -> Result<Json<BackendStatus>, ApiError> {
    let name = checked_name(name)?;
    non_empty(&body.revision, "revision")?;
    Ok(Json(state.canvas.prepare(&name, &body.revision).await?))
}

/// Start only a previously prepared exact backend revision.
#[utoipa::path(post, path = "/canvas-extensions/installed/{extension_name}/backend/start", tag = "Canvas Extensions",
    operation_id = "start_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_start_post",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    request_body = BackendRevisionRequest,
    responses((status = 200, description = "Successful Response", body = BackendStatus),
              (status = 409, description = "Revision is not prepared or cannot start"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn start_canvas_extension_backend(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<BackendRevisionRequest>,
) -> Result<Json<BackendStatus>, ApiError> {
    let name = checked_name(name)?;
    non_empty(&body.revision, "revision")?;
    Ok(Json(state.canvas.start(&name, &body.revision).await?))
}

/// Stop the backend's owned process group idempotently (its sessions are revoked).
#[utoipa::path(post, path = "/canvas-extensions/installed/{extension_name}/backend/stop", tag = "Canvas Extensions",
    operation_id = "stop_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_stop_post",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = BackendStatus),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn stop_canvas_extension_backend(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<BackendStatus>, ApiError> {
    let name = checked_name(name)?;
    Ok(Json(state.canvas.revoke_and_stop(&name).await))
}

/// Return bounded combined stdout and stderr from the owned process.
#[utoipa::path(get, path = "/canvas-extensions/installed/{extension_name}/backend/logs", tag = "Canvas Extensions",
    operation_id = "get_canvas_extension_backend_logs_endpoint_api_canvas_extensions_installed__extension_name__backend_logs_get",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)"),
           ("limit_bytes" = Option<i64>, Query, minimum = 1, maximum = 262144)),
    responses((status = 200, description = "Successful Response", body = BackendLogs),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_canvas_extension_backend_logs(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiQuery(query): ApiQuery<LogsQuery>,
) -> Result<Json<BackendLogs>, ApiError> {
    let name = checked_name(name)?;
    let limit = query.limit_bytes.unwrap_or(LOGS_DEFAULT);
    let l = || loc(&["query", "limit_bytes"]);
    if limit < 1 {
        return Err(ApiError::validation(vec![
            ValidationIssue::greater_than_equal(l(), json!(limit.to_string()), 1),
        ]));
    }
    if limit > LOGS_MAX {
        return Err(ApiError::validation(vec![
            ValidationIssue::less_than_equal(l(), json!(limit.to_string()), LOGS_MAX),
        ]));
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(Json(state.canvas.logs(&name, limit).await))
}

/// Delete mutable backend data separately from app uninstall.
#[utoipa::path(delete, path = "/canvas-extensions/installed/{extension_name}/backend/data", tag = "Canvas Extensions",
    operation_id = "delete_canvas_extension_backend_data_endpoint_api_canvas_extensions_installed__extension_name__backend_data_delete",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = BackendStatus),
              (status = 409, description = "Backend must be stopped first"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn delete_canvas_extension_backend_data(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<BackendStatus>, ApiError> {
    let name = checked_name(name)?;
    Ok(Json(state.canvas.delete_data(&name).await?))
}

/// The content type Python's `mimetypes` gives (`text/*` with UTF-8).
fn content_type(path: &std::path::Path) -> String {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let mime = match ext.as_deref() {
        Some("js" | "mjs") => "text/javascript".to_string(),
        _ => mime_guess::from_path(path)
            .first_raw()
            .unwrap_or("application/octet-stream")
            .to_string(),
    };
    if mime.starts_with("text/") {
        format!("{mime}; charset=utf-8")
    } else {
        mime
    }
}

async fn file_response(
    path: std::path::PathBuf,
    media_type: String,
    extra: &[(&'static str, &'static str)],
) -> Result<Response, ApiError> {
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(ApiError::internal)?;
    let mut response = Body::from_stream(tokio_util::io::ReaderStream::new(file)).into_response();
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&media_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    for (k, v) in extra {
        headers.insert(*k, HeaderValue::from_static(v));
    }
    Ok(response)
}

/// Serve an installed canvas extension's entrypoint bundle file
/// (containment re-validated on every request).
#[utoipa::path(get, path = "/canvas-extensions/installed/{extension_name}/bundle", tag = "Canvas Extensions",
    operation_id = "get_canvas_extension_bundle_endpoint_api_canvas_extensions_installed__extension_name__bundle_get",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response"),
              (status = 404, description = "Canvas extension or bundle not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_canvas_extension_bundle(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let name = checked_name(name)?;
    let path = state.canvas.bundle(name).await?;
    let media = content_type(&path);
    file_response(path, media, &[]).await
}

/// Serve the SVG icon declared by an installed canvas extension's manifest.
#[utoipa::path(get, path = "/canvas-extensions/installed/{extension_name}/icon", tag = "Canvas Extensions",
    operation_id = "get_canvas_extension_icon_endpoint_api_canvas_extensions_installed__extension_name__icon_get",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Canvas extension name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response"),
              (status = 404, description = "Canvas extension or icon not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_canvas_extension_icon(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let name = checked_name(name)?;
    let path = state.canvas.icon(name).await?;
    file_response(
        path,
        "image/svg+xml".into(),
        &[
            (
                "content-security-policy",
                "default-src 'none'; style-src 'unsafe-inline'; sandbox",
            ),
            ("x-content-type-options", "nosniff"),
        ],
    )
    .await
}
