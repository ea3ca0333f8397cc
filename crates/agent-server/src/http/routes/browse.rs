//! Directory browsing for workspace pickers: `GET /api/file/home` and
//! `GET /api/file/search_subdirs` (server-wide only, like the reference).

use crate::http::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::http::extract::{ApiQuery, query_bool};
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use openhands_protocol::files::{
    FileBrowserEntry, HomeResponse, SubdirectoryEntry, SubdirectoryPage,
};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Query of `GET /api/file/home`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HomeQuery {
    include_hidden: Option<String>,
}

/// Query of `GET /api/file/search_subdirs`.
#[derive(Debug, Clone, Deserialize)]
pub struct SubdirsQuery {
    path: String,
    page_id: Option<String>,
    limit: Option<i64>,
    include_hidden: Option<String>,
}

/// Directories directly in `dir` (symlinks and files skipped), sorted by
/// lower-case name then exact name. Blocking.
fn subdirectories(dir: &Path, include_hidden: bool) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !include_hidden && name.starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push((name, entry.path()));
        }
    }
    out.sort_by(|a, b| (a.0.to_lowercase(), &a.0).cmp(&(b.0.to_lowercase(), &b.0)));
    Ok(out)
}

fn home_dir() -> PathBuf {
    openhands_sdk::paths::user_home().unwrap_or_else(|| PathBuf::from("/"))
}

/// The server user's home directory, its top-level directories and the roots.
#[utoipa::path(get, path = "/file/home", tag = "Files",
    operation_id = "get_home_directory_api_file_home_get",
    security(("APIKeyHeader" = [])),
    params(("include_hidden" = Option<bool>, Query, description = "Include hidden top-level directories in `favorites`")),
    responses((status = 200, description = "Successful Response", body = HomeResponse),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_home_directory(
    State(_state): State<SharedState>,
    ApiQuery(query): ApiQuery<HomeQuery>,
) -> Result<Json<HomeResponse>, ApiError> {
    let include_hidden = query_bool("include_hidden", query.include_hidden.as_deref(), false)?;
    let home = home_dir();
    let scan = home.clone();
    let favorites = tokio::task::spawn_blocking(move || subdirectories(&scan, include_hidden))
        .await
        .map_err(ApiError::internal)?
        .unwrap_or_default()
        .into_iter()
        .take(50)
        .map(|(name, path)| FileBrowserEntry {
            label: name,
            path: path.display().to_string(),
        })
        .collect();
    Ok(Json(HomeResponse {
        home: home.display().to_string(),
        favorites,
        locations: vec![FileBrowserEntry {
            label: "/".into(),
            path: "/".into(),
        }],
    }))
}

/// Immediate subdirectories of `path`, paginated.
#[utoipa::path(get, path = "/file/search_subdirs", tag = "Files",
    operation_id = "search_subdirs_api_file_search_subdirs_get",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute directory path to list subdirectories of"),
           ("page_id" = Option<String>, Query, description = "Optional next_page_id from the previously returned page"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "The max number of results in the page"),
           ("include_hidden" = Option<bool>, Query, description = "Include hidden subdirectories (names starting with '.')")),
    responses((status = 200, description = "Successful Response", body = SubdirectoryPage),
              (status = 400, description = "Path is not absolute or not a directory"),
              (status = 404, description = "Directory not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn search_subdirs(
    State(_state): State<SharedState>,
    ApiQuery(query): ApiQuery<SubdirsQuery>,
) -> Result<Json<SubdirectoryPage>, ApiError> {
    let limit = query.limit.unwrap_or(100);
    let loc = || vec!["query".into(), "limit".into()];
    if limit <= 0 {
        return Err(ApiError::validation(vec![ValidationIssue::greater_than(
            loc(),
            Value::String(limit.to_string()),
            0,
        )]));
    }
    if limit > 100 {
        return Err(ApiError::validation(vec![
            ValidationIssue::less_than_equal(loc(), Value::String(limit.to_string()), 100),
        ]));
    }
    let include_hidden = query_bool("include_hidden", query.include_hidden.as_deref(), false)?;
    let target = PathBuf::from(&query.path);
    if !target.is_absolute() {
        return Err(ApiError::bad_request("Path must be absolute"));
    }
    match tokio::fs::metadata(&target).await {
        Err(_) => return Err(ApiError::not_found_msg("Directory not found")),
        Ok(m) if !m.is_dir() => return Err(ApiError::bad_request("Path is not a directory")),
        Ok(_) => {}
    }
    let entries = tokio::task::spawn_blocking(move || subdirectories(&target, include_hidden))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                ApiError::forbidden(format!("Permission denied: {e}"))
            } else {
                ApiError::internal(e)
            }
        })?;
    let start = query
        .page_id
        .as_deref()
        .and_then(|p| {
            entries
                .iter()
                .position(|(n, _)| n == p)
                .or_else(|| entries.iter().position(|(n, _)| n.to_lowercase() == p))
        })
        .unwrap_or(0);
    let limit = usize::try_from(limit).unwrap_or(100);
    let next_page_id = entries.get(start + limit).map(|(n, _)| n.clone());
    let items = entries
        .into_iter()
        .skip(start)
        .take(limit)
        .map(|(name, path)| SubdirectoryEntry {
            name,
            path: path.display().to_string(),
        })
        .collect();
    Ok(Json(SubdirectoryPage {
        items,
        next_page_id,
    }))
}
