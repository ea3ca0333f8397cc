//! `GET /api/file/archive` (and its conversation-scoped twin): a directory
//! downloaded as a git patch of its changes or as a tarball, with the
//! repository's identity in `X-Archive-*` headers, as the reference.

use super::files::{content_disposition, target_path};
use super::runtime::RuntimeContext;
use crate::http::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::http::extract::query_bool;
use crate::http::state::SharedState;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::validation::{ValidationError, parse_query};
use openhands_workspace::archive::{ArchiveError, ArchiveFormat, DEFAULT_EXCLUDES, create_archive};
use openhands_workspace::confine::Confinement;
use openhands_workspace::git::Git;
use serde::Deserialize;
use serde_json::Value;

/// The single-valued query parameters.
#[derive(Debug, Deserialize)]
struct ArchiveQuery {
    path: String,
    format: Option<String>,
    base_ref: Option<String>,
    use_default_excludes: Option<String>,
}

/// A parsed archive request.
struct ArchiveRequest {
    path: String,
    format: ArchiveFormat,
    base_ref: Option<String>,
    excludes: Vec<String>,
}

/// Reads the query; `exclude` may repeat.
fn parse(raw: Option<&str>) -> Result<ArchiveRequest, ApiError> {
    let raw = raw.unwrap_or("");
    let mut single = url::form_urlencoded::Serializer::new(String::new());
    let mut extra: Vec<String> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(raw.as_bytes()) {
        if k == "exclude" {
            extra.push(v.into_owned());
        } else {
            single.append_pair(&k, &v);
        }
    }
    let query: ArchiveQuery = parse_query(&single.finish())?;
    let format = match query.format.as_deref() {
        None => ArchiveFormat::GitDelta,
        Some(f) => ArchiveFormat::parse(f).ok_or_else(|| {
            ApiError::from(ValidationError::new(vec![ValidationIssue::literal(
                vec!["query".into(), "format".into()],
                Value::String(f.to_string()),
                &["git-delta", "tar.gz"],
            )]))
        })?,
    };
    let defaults = query_bool(
        "use_default_excludes",
        query.use_default_excludes.as_deref(),
        true,
    )?;
    let mut excludes: Vec<String> = if defaults {
        DEFAULT_EXCLUDES.iter().map(|s| s.to_string()).collect()
    } else {
        Vec::new()
    };
    excludes.extend(extra);
    Ok(ArchiveRequest {
        path: query.path,
        format,
        base_ref: query.base_ref,
        excludes,
    })
}

/// Percent-encodes a header value as the reference does (`quote(v, safe="")`).
fn header_safe(value: &str) -> String {
    const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string()
}

async fn archive(
    state: &SharedState,
    confinement: Option<Confinement>,
    raw_query: Option<&str>,
) -> Result<Response, ApiError> {
    state.activity.touch();
    let request = parse(raw_query)?;
    let target = target_path(confinement.as_ref(), &request.path).await?;
    match tokio::fs::metadata(&target).await {
        Err(_) => return Err(ApiError::not_found_msg("Directory not found")),
        Ok(m) if !m.is_dir() => return Err(ApiError::bad_request("Path is not a directory")),
        Ok(_) => {}
    }
    if request
        .base_ref
        .as_deref()
        .is_some_and(|r| r.starts_with('-'))
    {
        return Err(ApiError::bad_request("base_ref must not start with '-'"));
    }
    let git = Git::new(state.limits.git_timeout);
    let archive = create_archive(
        &git,
        &target,
        request.format,
        request.base_ref.as_deref(),
        &request.excludes,
    )
    .await
    .map_err(|e| match e {
        ArchiveError::NotARepository(_) | ArchiveError::Invalid(_) => {
            ApiError::bad_request(e.to_string())
        }
        ArchiveError::Git(_) | ArchiveError::Io(_) => {
            tracing::error!(path = %target.display(), error = %e, "archive failed");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
    })?;
    let file = tokio::fs::File::open(&archive.file).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Failed to archive directory: {e}"),
        )
    })?;
    let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    // The temporary file goes once the body is sent (or dropped): the open
    // descriptor keeps the data readable after the unlink.
    let temp = archive.file;
    let stream = tokio_util::io::ReaderStream::with_capacity(file, 256 * 1024);
    let body = Body::from_stream(futures::StreamExt::map(stream, move |chunk| {
        let _keep = &temp;
        chunk
    }));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(request.format.media_type()),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(&archive.filename),
    );
    let mut extra: Vec<(&'static str, String)> = Vec::new();
    if let Some(repo) = &archive.repository {
        for (name, value) in [
            ("x-archive-repo-remote", &repo.repo_remote),
            ("x-archive-branch", &repo.branch),
            ("x-archive-head-commit", &repo.head_commit),
        ] {
            if let Some(v) = value {
                extra.push((name, header_safe(v)));
            }
        }
        extra.push((
            "x-archive-repo-root",
            header_safe(&archive.root.to_string_lossy()),
        ));
    }
    if !archive.base_commit.is_empty() {
        extra.push(("x-archive-base-commit", archive.base_commit.clone()));
        extra.push((
            "x-archive-base-ref",
            request
                .base_ref
                .clone()
                .unwrap_or_else(|| "auto".to_string()),
        ));
    }
    for (name, value) in extra {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    Ok(response)
}

/// A directory as a git patch (`format=git-delta`, default) or a tarball.
#[utoipa::path(get, path = "/file/archive", tag = "Files",
    operation_id = "archive_directory_api_file_archive_get",
    security(("APIKeyHeader" = [])),
    params(
        ("path" = String, Query, description = "Absolute path of the directory to archive"),
        ("format" = Option<String>, Query, description = "'git-delta' (default) or 'tar.gz'"),
        ("base_ref" = Option<String>, Query, description = "git-delta only: the base to diff against"),
        ("use_default_excludes" = Option<bool>, Query, description = "Apply the built-in excludes (default true)"),
        ("exclude" = Option<Vec<String>>, Query, description = "More glob patterns to exclude (repeatable)")),
    responses((status = 200, description = "The archive"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn archive_directory(
    State(state): State<SharedState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    archive(&state, None, query.as_deref()).await
}

/// [`archive_directory`] confined to a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/file/archive", tag = "Files",
    operation_id = "archive_directory_api_conversations__runtime_conversation_id__file_archive_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
        ("path" = String, Query, description = "Path of the directory to archive"),
        ("format" = Option<String>, Query, description = "'git-delta' (default) or 'tar.gz'"),
        ("base_ref" = Option<String>, Query, description = "git-delta only: the base to diff against"),
        ("use_default_excludes" = Option<bool>, Query, description = "Apply the built-in excludes (default true)"),
        ("exclude" = Option<Vec<String>>, Query, description = "More glob patterns to exclude (repeatable)")),
    responses((status = 200, description = "The archive"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_archive_directory(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    archive(&state, Some(rt.confinement), query.as_deref()).await
}
