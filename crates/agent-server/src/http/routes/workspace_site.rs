//! A conversation's workspace as a static web site:
//! `GET /api/conversations/{conversation_id}/workspace[/{file_path}]` serves
//! the file (content type from its name, ranges, `Last-Modified`/`ETag`), a
//! directory's `index.html`, 404 for anything else and 400 for a path that
//! resolves outside the workspace — as the reference's workspace router, so
//! an agent-built page can be opened in a browser.

use crate::http::error::ApiError;
use crate::http::extract::parse_uuid_param;
use crate::http::state::SharedState;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use openhands_workspace::confine::{is_within, resolve_lenient};
use std::path::{Path, PathBuf};
use tower::ServiceExt;
use tower_http::services::ServeFile;

/// Where the workspace of `conversation_id` lives (canonical), or the
/// reference's 404s.
async fn workspace_dir(state: &SharedState, conversation_id: &str) -> Result<PathBuf, ApiError> {
    let id = parse_uuid_param("conversation_id", conversation_id)?;
    let scope = state
        .runtime_scope(id)
        .await
        .ok_or_else(|| ApiError::not_found_msg(format!("Conversation not found: {id}")))?;
    let root = scope.workspace_root.clone();
    let dir = tokio::task::spawn_blocking(move || resolve_lenient(&root))
        .await
        .map_err(|_| ApiError::not_found_msg("Workspace directory does not exist"))?;
    match tokio::fs::metadata(&dir).await {
        Ok(m) if m.is_dir() => Ok(dir),
        _ => Err(ApiError::not_found_msg(
            "Workspace directory does not exist",
        )),
    }
}

/// The file to serve for `file_path` under `root`.
async fn target_file(root: PathBuf, file_path: String) -> Result<PathBuf, ApiError> {
    let candidate = {
        let root = root.clone();
        tokio::task::spawn_blocking(move || resolve_lenient(&root.join(file_path)))
            .await
            .map_err(|_| ApiError::not_found_msg("File not found"))?
    };
    if candidate != root && !is_within(&root, &candidate) {
        return Err(ApiError::bad_request("Path is outside the workspace"));
    }
    match tokio::fs::metadata(&candidate).await {
        Ok(m) if m.is_dir() => {
            let index = candidate.join("index.html");
            match tokio::fs::metadata(&index).await {
                Ok(m) if m.is_file() => Ok(index),
                _ => Err(ApiError::not_found_msg("No index.html in directory")),
            }
        }
        Ok(m) if m.is_file() => Ok(candidate),
        _ => Err(ApiError::not_found_msg("File not found")),
    }
}

/// The content type Python's `mimetypes` would give (`text/*` with UTF-8,
/// unknown names as bytes), as the reference's `FileResponse` sends.
fn content_type(path: &Path) -> HeaderValue {
    let mime = mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let value = if mime.starts_with("text/") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    };
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

/// An `ETag` from the file's size and modification time.
async fn etag(path: &Path) -> Option<HeaderValue> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    HeaderValue::from_str(&format!("\"{:x}-{:x}\"", modified.as_nanos(), meta.len())).ok()
}

async fn serve(
    state: SharedState,
    conversation_id: String,
    file_path: String,
    request: Request,
) -> Result<Response, ApiError> {
    state.activity.touch();
    let root = workspace_dir(&state, &conversation_id).await?;
    let file = target_file(root, file_path).await?;
    let tag = etag(&file).await;
    let mut response = match ServeFile::new(&file).oneshot(request).await {
        Ok(r) => r.into_response(),
        Err(never) => match never {},
    };
    let success = response.status().is_success();
    let headers = response.headers_mut();
    if success {
        headers.insert(header::CONTENT_TYPE, content_type(&file));
    }
    if let Some(tag) = tag {
        headers.insert(header::ETAG, tag);
    }
    Ok(response)
}

/// `index.html` of the conversation's workspace root.
#[utoipa::path(get, path = "/conversations/{conversation_id}/workspace", tag = "Workspace",
    operation_id = "serve_workspace_root_api_conversations__conversation_id__workspace_get",
    params(("conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "The file"),
        (status = 404, description = "File or conversation not found")))]
pub async fn serve_workspace_root(
    State(state): State<SharedState>,
    UrlPath(conversation_id): UrlPath<String>,
    request: Request,
) -> Result<Response, ApiError> {
    serve(state, conversation_id, String::new(), request).await
}

/// A file (or a directory's `index.html`) of the conversation's workspace.
#[utoipa::path(get, path = "/conversations/{conversation_id}/workspace/{file_path}", tag = "Workspace",
    operation_id = "serve_workspace_file_api_conversations__conversation_id__workspace__file_path__get",
    params(("conversation_id" = String, Path, format = Uuid), ("file_path" = String, Path)),
    responses((status = 200, description = "The file"),
        (status = 404, description = "File or conversation not found")))]
pub async fn serve_workspace_file(
    State(state): State<SharedState>,
    UrlPath((conversation_id, file_path)): UrlPath<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    serve(state, conversation_id, file_path, request).await
}

/// The routes (relative to `/api`); the file route takes the rest of the
/// path, slashes included.
pub fn router() -> utoipa_axum::router::OpenApiRouter<SharedState> {
    utoipa_axum::router::OpenApiRouter::new()
        .routes(crate::http::route_docs::routes!(serve_workspace_root))
        .route(
            "/conversations/{conversation_id}/workspace/{*file_path}",
            axum::routing::get(serve_workspace_file),
        )
}

/// The file route's documentation (its axum path is a wildcard, which the
/// router cannot derive from the documented path).
#[derive(utoipa::OpenApi)]
#[openapi(paths(serve_workspace_file))]
pub struct WorkspaceSiteDoc;
