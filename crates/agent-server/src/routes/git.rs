//! Git routes: change list and per-file diff, server-wide under
//! `/api/git/...` and confined under `/api/conversations/{id}/git/...`.

use super::runtime::RuntimeContext;
use crate::confine::{Confinement, check_path};
use crate::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::extract::ApiQuery;
use crate::git::{Git, GitChange, GitDiff, GitError};
use crate::state::SharedState;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

const SHA_PATTERN: &str = "^[0-9a-fA-F]{4,64}$";

/// Query of `GET .../git/changes`.
#[derive(Debug, Clone, Deserialize)]
pub struct ChangesQuery {
    /// The repository (or directory) path.
    pub path: String,
    /// Ref to compare with (default: auto-detected base).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// Query of `GET .../git/diff`.
#[derive(Debug, Clone, Deserialize)]
pub struct DiffQuery {
    /// The file path.
    pub path: String,
    /// Ref to compare with (default: auto-detected base).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Show the change this commit made instead (exclusive with `ref`).
    pub commit: Option<String>,
}

fn is_sha(text: &str) -> bool {
    (4..=64).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit())
}

async fn changes_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    query: ChangesQuery,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    state.activity.touch();
    let path: PathBuf = check_path(confinement.as_ref(), &query.path, "path").await?;
    let git = Git::new(state.limits.git_timeout);
    match git.changes(&path, query.git_ref.as_deref()).await {
        Ok(changes) => Ok(Json(changes)),
        Err(GitError::Repository(_)) => Ok(Json(Vec::new())),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

async fn diff_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    query: DiffQuery,
) -> Result<Json<GitDiff>, ApiError> {
    state.activity.touch();
    if let Some(commit) = &query.commit
        && !is_sha(commit)
    {
        return Err(ApiError::validation(vec![
            ValidationIssue::pattern_mismatch(
                vec!["query".into(), "commit".into()],
                Value::String(commit.clone()),
                SHA_PATTERN,
            ),
        ]));
    }
    let path = check_path(confinement.as_ref(), &query.path, "path").await?;
    if query.git_ref.is_some() && query.commit.is_some() {
        return Err(ApiError::bad_request(
            "'ref' and 'commit' are mutually exclusive",
        ));
    }
    let git = Git::new(state.limits.git_timeout);
    let result = match &query.commit {
        Some(commit) => git.commit_file_diff(&path, commit).await,
        None => git.diff(&path, query.git_ref.as_deref()).await,
    };
    match result {
        Ok(diff) => Ok(Json(diff)),
        Err(GitError::Repository(_)) => Ok(Json(GitDiff {
            modified: None,
            original: None,
        })),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// Files changed in a repository, relative to `path`.
#[utoipa::path(get, path = "/git/changes", tag = "Git",
    operation_id = "git_changes_query_api_git_changes_get",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "The git repository path"),
           ("ref" = Option<String>, Query, description = "Optional git ref to diff against (e.g. 'HEAD'); default: the upstream/default branch is auto-detected.")),
    responses((status = 200, description = "Successful Response", body = Vec<GitChange>),
              (status = 400, description = "A git command failed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn git_changes(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<ChangesQuery>,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    changes_core(&state, None, query).await
}

/// Both sides of one file's diff.
#[utoipa::path(get, path = "/git/diff", tag = "Git",
    operation_id = "git_diff_query_api_git_diff_get",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "The file path to get diff for"),
           ("ref" = Option<String>, Query, description = "Optional git ref to diff against"),
           ("commit" = Option<String>, Query, pattern = "^[0-9a-fA-F]{4,64}$", description = "Optional commit SHA: the change that commit introduced. Mutually exclusive with 'ref'.")),
    responses((status = 200, description = "Successful Response", body = GitDiff),
              (status = 400, description = "Bad file or git failure"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn git_diff(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> Result<Json<GitDiff>, ApiError> {
    diff_core(&state, None, query).await
}

/// Files changed in a repository inside a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/git/changes", tag = "Git",
    operation_id = "git_changes_query_api_conversations__runtime_conversation_id__git_changes_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "The git repository path"),
           ("ref" = Option<String>, Query)),
    responses((status = 200, description = "Successful Response", body = Vec<GitChange>),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_git_changes(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<ChangesQuery>,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    changes_core(&state, Some(rt.confinement), query).await
}

/// One file's diff inside a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/git/diff", tag = "Git",
    operation_id = "git_diff_query_api_conversations__runtime_conversation_id__git_diff_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "The file path to get diff for"),
           ("ref" = Option<String>, Query),
           ("commit" = Option<String>, Query, pattern = "^[0-9a-fA-F]{4,64}$")),
    responses((status = 200, description = "Successful Response", body = GitDiff),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_git_diff(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> Result<Json<GitDiff>, ApiError> {
    diff_core(&state, Some(rt.confinement), query).await
}
