//! File routes: upload (multipart, streamed to disk), download (streamed)
//! and directory creation, server-wide under `/api/file/...` and confined to a
//! conversation's workspace under `/api/conversations/{id}/file/...`.

use super::runtime::RuntimeContext;
use crate::http::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::http::extract::{ApiQuery, body_rejection};
use crate::http::state::SharedState;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::extract::multipart::{Field, Multipart, MultipartRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::Success;
use openhands_workspace::confine::{Confinement, check_path};
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

/// `?path=` of the file routes.
#[derive(Debug, Clone, Deserialize)]
pub struct PathQuery {
    /// Absolute path.
    pub path: String,
}

/// Result of an upload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileUploadResult {
    /// Always true.
    pub success: bool,
    /// Number of bytes written to the destination.
    pub file_size: u64,
}

/// Multipart body of an upload (documentation only).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file content.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

fn must_be_absolute(path: &str) -> Result<(), ApiError> {
    if Path::new(path).is_absolute() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Path must be absolute"))
    }
}

/// The target path: confined and resolved in a conversation, else as given
/// (which must be absolute).
pub(super) async fn target_path(
    confinement: Option<&Confinement>,
    path: &str,
) -> Result<PathBuf, ApiError> {
    if confinement.is_none() {
        must_be_absolute(path)?;
    }
    Ok(check_path(confinement, path, "path").await?)
}

fn multipart_error(status: StatusCode) -> ApiError {
    body_rejection(status)
}

fn missing_file() -> ApiError {
    ApiError::validation(vec![ValidationIssue::missing(vec![
        "body".into(),
        "file".into(),
    ])])
}

/// Streams `field` into a temporary sibling of `target`, then renames it into place.
async fn write_field(field: &mut Field<'_>, target: &Path) -> Result<u64, ApiError> {
    if tokio::fs::metadata(target).await.is_ok_and(|m| m.is_dir()) {
        return Err(ApiError::bad_request("Path is a directory"));
    }
    let parent = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    match tokio::fs::create_dir_all(&parent).await {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::AlreadyExists | ErrorKind::NotADirectory
            ) =>
        {
            return Err(ApiError::bad_request(
                "A parent of the path is not a directory",
            ));
        }
        Err(e) => return Err(upload_failed(e)),
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "upload".into());
    let tmp = parent.join(format!(".{name}.{}.upload", uuid::Uuid::new_v4().simple()));
    let result = async {
        let mut file = tokio::fs::File::create(&tmp).await.map_err(upload_failed)?;
        let mut size = 0u64;
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => {
                    file.write_all(&chunk).await.map_err(upload_failed)?;
                    size += chunk.len() as u64;
                }
                Ok(None) => break,
                Err(e) => return Err(multipart_error(e.status())),
            }
        }
        file.flush().await.map_err(upload_failed)?;
        file.sync_all().await.map_err(upload_failed)?;
        drop(file);
        openhands_workspace::fsutil::rename_into_place_async(
            tmp.to_path_buf(),
            target.to_path_buf(),
        )
        .await
        .map_err(|e| {
            if e.kind() == ErrorKind::IsADirectory {
                ApiError::bad_request("Path is a directory")
            } else {
                upload_failed(e)
            }
        })?;
        Ok(size)
    }
    .await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    result
}

fn upload_failed(e: std::io::Error) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("Failed to upload file: {e}"),
    )
}

async fn upload_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    path: &str,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<FileUploadResult>, ApiError> {
    state.activity.touch();
    if let Some(c) = &confinement {
        check_path(Some(c), path, "path").await?;
    }
    let mut multipart = match multipart {
        Ok(m) => m,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Err(ApiError::payload_too_large());
        }
        Err(_) => return Err(missing_file()),
    };
    let mut field = loop {
        match multipart.next_field().await {
            Ok(Some(field)) if field.name() == Some("file") => break field,
            Ok(Some(_)) => continue,
            Ok(None) => return Err(missing_file()),
            Err(e) => return Err(multipart_error(e.status())),
        }
    };
    let target = target_path(confinement.as_ref(), path).await?;
    let size = write_field(&mut field, &target).await?;
    tracing::info!(path = %target.display(), size, "uploaded file");
    Ok(Json(FileUploadResult {
        success: true,
        file_size: size,
    }))
}

/// `attachment; filename="..."` the way Starlette writes it.
pub(super) fn content_disposition(name: &str) -> HeaderValue {
    let safe = name
        .chars()
        .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ');
    let value = if safe {
        format!("attachment; filename=\"{name}\"")
    } else {
        let encoded: String = url::form_urlencoded::byte_serialize(name.as_bytes())
            .collect::<String>()
            .replace('+', "%20");
        format!("attachment; filename*=utf-8''{encoded}")
    };
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

async fn download_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    path: &str,
) -> Result<Response, ApiError> {
    state.activity.touch();
    let target = target_path(confinement.as_ref(), path).await?;
    let meta = match tokio::fs::metadata(&target).await {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(ApiError::not_found_msg("File not found"));
        }
        Err(e) => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Failed to download file: {e}"),
            ));
        }
    };
    if !meta.is_file() {
        return Err(ApiError::bad_request("Path is not a file"));
    }
    let file = tokio::fs::File::open(&target).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Failed to download file: {e}"),
        )
    })?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
        file,
        256 * 1024,
    ));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(meta.len()));
    headers.insert(header::CONTENT_DISPOSITION, content_disposition(&name));
    if let Ok(modified) = meta.modified() {
        let t: chrono::DateTime<chrono::Utc> = modified.into();
        if let Ok(v) = HeaderValue::from_str(&t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()) {
            headers.insert(header::LAST_MODIFIED, v);
        }
    }
    Ok(response)
}

async fn create_directory_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    path: &str,
) -> Result<Json<Success>, ApiError> {
    state.activity.touch();
    let target = target_path(confinement.as_ref(), path).await?;
    match tokio::fs::create_dir_all(&target).await {
        Ok(()) => Ok(Json(Success::default())),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::AlreadyExists | ErrorKind::NotADirectory
            ) =>
        {
            Err(ApiError::bad_request("Path exists and is not a directory"))
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            Err(ApiError::forbidden(format!("Permission denied: {e}")))
        }
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Failed to create directory: {e}"),
        )),
    }
}

// ---- server-wide routes -------------------------------------------------

/// Upload a file to an absolute path (multipart field `file`).
#[utoipa::path(post, path = "/file/upload", tag = "Files",
    operation_id = "upload_file_query_api_file_upload_post",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute file path")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "Successful Response", body = FileUploadResult),
              (status = 400, description = "Path is not absolute, is a directory, or has a file as parent"),
              (status = 413, description = "Upload too large"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn upload_file(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<PathQuery>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<FileUploadResult>, ApiError> {
    upload_core(&state, None, &query.path, multipart).await
}

/// Download a file from an absolute path.
#[utoipa::path(get, path = "/file/download", tag = "Files",
    operation_id = "download_file_query_api_file_download_get",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute file path")),
    responses((status = 200, description = "Successful Response", content_type = "application/octet-stream", body = Vec<u8>),
              (status = 400, description = "Path is not absolute or not a file"),
              (status = 404, description = "File not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn download_file(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Response, ApiError> {
    download_core(&state, None, &query.path).await
}

/// Create a directory, including missing parents (idempotent).
#[utoipa::path(post, path = "/file/create_directory", tag = "Files",
    operation_id = "create_directory_api_file_create_directory_post",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute directory path to create")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 400, description = "Path is not absolute, or exists and is not a directory"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn create_directory(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Json<Success>, ApiError> {
    create_directory_core(&state, None, &query.path).await
}

// ---- conversation-scoped routes ------------------------------------------

/// Upload a file into a conversation's workspace.
#[utoipa::path(post, path = "/conversations/{runtime_conversation_id}/file/upload", tag = "Files",
    operation_id = "upload_file_query_api_conversations__runtime_conversation_id__file_upload_post",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "Absolute file path inside the workspace")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 200, description = "Successful Response", body = FileUploadResult),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_upload_file(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<PathQuery>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<FileUploadResult>, ApiError> {
    upload_core(&state, Some(rt.confinement), &query.path, multipart).await
}

/// Download a file from a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/file/download", tag = "Files",
    operation_id = "download_file_query_api_conversations__runtime_conversation_id__file_download_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "Absolute file path inside the workspace")),
    responses((status = 200, description = "Successful Response", content_type = "application/octet-stream", body = Vec<u8>),
              (status = 404, description = "Conversation or file not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_download_file(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Response, ApiError> {
    download_core(&state, Some(rt.confinement), &query.path).await
}

/// Create a directory in a conversation's workspace.
#[utoipa::path(post, path = "/conversations/{runtime_conversation_id}/file/create_directory", tag = "Files",
    operation_id = "create_directory_api_conversations__runtime_conversation_id__file_create_directory_post",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "Absolute directory path inside the workspace")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_create_directory(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Json<Success>, ApiError> {
    create_directory_core(&state, Some(rt.confinement), &query.path).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_quotes_like_starlette() {
        assert_eq!(
            content_disposition("x.txt"),
            "attachment; filename=\"x.txt\""
        );
        assert_eq!(
            content_disposition("ä b.txt"),
            "attachment; filename*=utf-8''%C3%A4%20b.txt"
        );
    }
}
