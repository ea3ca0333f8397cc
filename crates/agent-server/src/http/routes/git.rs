//! Git routes: change list and per-file diff, server-wide under
//! `/api/git/...` and confined under `/api/conversations/{id}/git/...`.

use super::runtime::RuntimeContext;
use crate::http::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::http::extract::ApiQuery;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::{Path, State};
use openhands_workspace::confine::{Confinement, check_path};
use openhands_workspace::git::{Git, GitChange, GitCommitsPage, GitDiff, GitError};
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

/// Query of `GET .../git/commits`.
#[derive(Debug, Clone, Deserialize)]
pub struct CommitsQuery {
    /// The repository path.
    pub path: String,
    /// Most commits to return (1..=200, default 50).
    pub limit: Option<i64>,
}

/// Query of `GET .../git/commits/{sha}/changes`.
#[derive(Debug, Clone, Deserialize)]
pub struct PathOnlyQuery {
    /// The repository path.
    pub path: String,
}

fn sha_issue(loc: &str, name: &str, value: &str) -> ApiError {
    ApiError::validation(vec![ValidationIssue::pattern_mismatch(
        vec![loc.into(), name.into()],
        Value::String(value.to_string()),
        SHA_PATTERN,
    )])
}

async fn commits_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    query: CommitsQuery,
) -> Result<Json<GitCommitsPage>, ApiError> {
    state.activity.touch();
    let limit = query.limit.unwrap_or(50);
    let loc = || vec!["query".into(), "limit".into()];
    if limit < 1 {
        return Err(ApiError::validation(vec![
            ValidationIssue::greater_than_equal(loc(), Value::String(limit.to_string()), 1),
        ]));
    }
    if limit > 200 {
        return Err(ApiError::validation(vec![
            ValidationIssue::less_than_equal(loc(), Value::String(limit.to_string()), 200),
        ]));
    }
    let path = check_path(confinement.as_ref(), &query.path, "path").await?;
    let git = Git::new(state.limits.git_timeout);
    match git
        .commits(&path, usize::try_from(limit).unwrap_or(50))
        .await
    {
        Ok(page) => Ok(Json(page)),
        Err(GitError::Repository(_)) => Ok(Json(GitCommitsPage {
            commits: Vec::new(),
            has_more: false,
        })),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

async fn commit_changes_core(
    state: &SharedState,
    confinement: Option<Confinement>,
    sha: &str,
    query: PathOnlyQuery,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    state.activity.touch();
    if !is_sha(sha) {
        return Err(sha_issue("path", "sha", sha));
    }
    let path = check_path(confinement.as_ref(), &query.path, "path").await?;
    let git = Git::new(state.limits.git_timeout);
    match git.commit_changes(&path, sha).await {
        Ok(changes) => Ok(Json(changes)),
        Err(GitError::Repository(_)) => Ok(Json(Vec::new())),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
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

/// The repository's most recent commits, newest first.
#[utoipa::path(get, path = "/git/commits", tag = "Git",
    operation_id = "git_commits_query_api_git_commits_get",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "The git repository path"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 200, description = "Maximum commits to return")),
    responses((status = 200, description = "Successful Response", body = GitCommitsPage),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn git_commits(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<CommitsQuery>,
) -> Result<Json<GitCommitsPage>, ApiError> {
    commits_core(&state, None, query).await
}

/// Files changed by one commit (vs its first parent).
#[utoipa::path(get, path = "/git/commits/{sha}/changes", tag = "Git",
    operation_id = "git_commit_changes_query_api_git_commits__sha__changes_get",
    security(("APIKeyHeader" = [])),
    params(("sha" = String, Path, pattern = "^[0-9a-fA-F]{4,64}$", description = "Commit SHA"),
           ("path" = String, Query, description = "The git repository path")),
    responses((status = 200, description = "Successful Response", body = Vec<GitChange>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn git_commit_changes(
    State(state): State<SharedState>,
    Path(sha): Path<String>,
    ApiQuery(query): ApiQuery<PathOnlyQuery>,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    commit_changes_core(&state, None, &sha, query).await
}

/// Recent commits of a repository inside a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/git/commits", tag = "Git",
    operation_id = "git_commits_query_api_conversations__runtime_conversation_id__git_commits_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("path" = String, Query, description = "The git repository path"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 200)),
    responses((status = 200, description = "Successful Response", body = GitCommitsPage),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_git_commits(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<CommitsQuery>,
) -> Result<Json<GitCommitsPage>, ApiError> {
    commits_core(&state, Some(rt.confinement), query).await
}

/// Files changed by one commit of a repository inside a conversation's workspace.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/git/commits/{sha}/changes", tag = "Git",
    operation_id = "git_commit_changes_query_api_conversations__runtime_conversation_id__git_commits__sha__changes_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("sha" = String, Path, pattern = "^[0-9a-fA-F]{4,64}$"),
           ("path" = String, Query, description = "The git repository path")),
    responses((status = 200, description = "Successful Response", body = Vec<GitChange>),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_git_commit_changes(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    Path(params): Path<(String, String)>,
    ApiQuery(query): ApiQuery<PathOnlyQuery>,
) -> Result<Json<Vec<GitChange>>, ApiError> {
    commit_changes_core(&state, Some(rt.confinement), &params.1, query).await
}
