//! `/api/workspaces` and `/api/workspaces/parents` (list, add, delete): the
//! saved workspaces of [`crate::service::workspaces`], behind the session
//! key, with the reference's shapes (`workspaceParents`, `parentPath`) and
//! answers (409 for a corrupt file, 404 for an unknown path).

use crate::http::error::{ApiError, LocPart, ValidationIssue};
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::workspaces::{
    MAX_NAME_LEN, MAX_PATH_LEN, WorkspaceItem, WorkspaceParentItem, Workspaces, WorkspacesError,
    WorkspacesStore,
};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `GET|POST /api/workspaces` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspacesListResponse {
    /// Saved workspaces (`id`, `name`, `path`, `parentPath`?).
    #[schema(value_type = Vec<Object>)]
    pub workspaces: Vec<Value>,
    /// Saved workspace parents (`id`, `name`, `path`).
    #[serde(rename = "workspaceParents")]
    #[schema(value_type = Vec<Object>)]
    pub workspace_parents: Vec<Value>,
}

/// `POST /api/workspaces` body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddWorkspacesRequest {
    /// Workspaces to add (deduplicated by `path`).
    #[schema(value_type = Vec<Object>)]
    pub workspaces: Vec<WorkspaceItem>,
}

/// `POST /api/workspaces/parents` body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddWorkspaceParentsRequest {
    /// Parents to add (deduplicated by `path`).
    #[schema(value_type = Vec<Object>)]
    pub parents: Vec<WorkspaceParentItem>,
}

/// `?path=` of the deletes.
#[derive(Debug, Deserialize)]
pub struct PathQuery {
    /// The absolute path to remove.
    pub path: String,
}

/// Delete answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeleteResponse {
    /// Always true.
    pub deleted: bool,
}

/// The workspace routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_workspaces, add_workspaces, delete_workspace))
        .routes(routes!(add_workspace_parents, delete_workspace_parent))
}

fn response(doc: Workspaces) -> Json<WorkspacesListResponse> {
    Json(WorkspacesListResponse {
        workspaces: doc.workspaces.iter().map(|w| json!(w)).collect(),
        workspace_parents: doc.parents.iter().map(|p| json!(p)).collect(),
    })
}

fn store_error(e: WorkspacesError, io_message: &str) -> ApiError {
    match e {
        WorkspacesError::Corrupt => ApiError::conflict("Workspaces file is corrupted"),
        WorkspacesError::Io(err) => {
            tracing::error!(error = %err, "workspaces file I/O failed");
            ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, io_message)
        }
    }
}

async fn with_store<T: Send + 'static>(
    state: &SharedState,
    io_message: &'static str,
    op: impl FnOnce(&WorkspacesStore) -> Result<T, WorkspacesError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.workspaces.clone();
    tokio::task::spawn_blocking(move || op(&store))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| store_error(e, io_message))
}

/// pydantic's length issues for one string field.
fn length_issue(loc: Vec<LocPart>, value: &str, min: usize, max: usize) -> Option<ValidationIssue> {
    let n = value.chars().count();
    if n < min {
        let s = if min == 1 { "" } else { "s" };
        return Some(
            ValidationIssue::new(
                "string_too_short",
                loc,
                format!("String should have at least {min} character{s}"),
                json!(value),
            )
            .with_ctx(json!({"min_length": min})),
        );
    }
    (n > max).then(|| {
        ValidationIssue::new(
            "string_too_long",
            loc,
            format!("String should have at most {max} characters"),
            json!(value),
        )
        .with_ctx(json!({"max_length": max}))
    })
}

fn item_issues(
    list: &str,
    index: usize,
    fields: &[(&str, &str, usize, usize)],
    out: &mut Vec<ValidationIssue>,
) {
    for (name, value, min, max) in fields {
        let loc: Vec<LocPart> = vec![
            "body".into(),
            list.into(),
            LocPart::Index(index),
            (*name).into(),
        ];
        out.extend(length_issue(loc, value, *min, *max));
    }
}

fn check_workspaces(items: &[WorkspaceItem]) -> Result<(), ApiError> {
    let mut issues = Vec::new();
    for (i, w) in items.iter().enumerate() {
        let mut fields = vec![
            ("id", w.id.as_str(), 1, MAX_PATH_LEN),
            ("name", w.name.as_str(), 1, MAX_NAME_LEN),
            ("path", w.path.as_str(), 1, MAX_PATH_LEN),
        ];
        if let Some(p) = &w.parent_path {
            fields.push(("parentPath", p.as_str(), 0, MAX_PATH_LEN));
        }
        item_issues("workspaces", i, &fields, &mut issues);
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(issues))
    }
}

fn check_parents(items: &[WorkspaceParentItem]) -> Result<(), ApiError> {
    let mut issues = Vec::new();
    for (i, p) in items.iter().enumerate() {
        let fields = [
            ("id", p.id.as_str(), 1, MAX_PATH_LEN),
            ("name", p.name.as_str(), 1, MAX_NAME_LEN),
            ("path", p.path.as_str(), 1, MAX_PATH_LEN),
        ];
        item_issues("parents", i, &fields, &mut issues);
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(issues))
    }
}

/// Return the saved workspaces and workspace parents.
#[utoipa::path(get, path = "/workspaces", tag = "Workspaces",
    operation_id = "list_workspaces_api_workspaces_get",
    security(("APIKeyHeader" = [])),
    responses(
        (status = 200, description = "Successful Response", body = WorkspacesListResponse),
        (status = 409, description = "Workspaces file is corrupted", body = crate::http::error::ErrorDetail)))]
pub async fn list_workspaces(
    State(state): State<SharedState>,
) -> Result<Json<WorkspacesListResponse>, ApiError> {
    let doc = with_store(&state, "Failed to read workspaces", |s| s.load()).await?;
    Ok(response(doc))
}

/// Append workspaces to the saved list (idempotent: deduplicated by `path`).
#[utoipa::path(post, path = "/workspaces", tag = "Workspaces",
    operation_id = "add_workspaces_api_workspaces_post",
    security(("APIKeyHeader" = [])),
    request_body = AddWorkspacesRequest,
    responses(
        (status = 200, description = "Successful Response", body = WorkspacesListResponse),
        (status = 409, description = "Workspaces file is corrupted", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn add_workspaces(
    State(state): State<SharedState>,
    ApiJson(body): ApiJson<AddWorkspacesRequest>,
) -> Result<Json<WorkspacesListResponse>, ApiError> {
    check_workspaces(&body.workspaces)?;
    let doc = with_store(&state, "Failed to save workspaces", move |s| {
        s.add_workspaces(body.workspaces)
    })
    .await?;
    Ok(response(doc))
}

/// Remove a workspace by its absolute path.
#[utoipa::path(delete, path = "/workspaces", tag = "Workspaces",
    operation_id = "delete_workspace_api_workspaces_delete",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute workspace path to remove")),
    responses(
        (status = 200, description = "Successful Response", body = DeleteResponse),
        (status = 404, description = "Workspace not found", body = crate::http::error::ErrorDetail),
        (status = 409, description = "Workspaces file is corrupted", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_workspace(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Json<DeleteResponse>, ApiError> {
    let removed = with_store(&state, "Failed to update workspaces", move |s| {
        s.remove_workspace(&query.path)
    })
    .await?;
    if !removed {
        return Err(ApiError::not_found_msg("Workspace not found"));
    }
    Ok(Json(DeleteResponse { deleted: true }))
}

/// Append workspace parents (idempotent: deduplicated by `path`).
#[utoipa::path(post, path = "/workspaces/parents", tag = "Workspaces",
    operation_id = "add_workspace_parents_api_workspaces_parents_post",
    security(("APIKeyHeader" = [])),
    request_body = AddWorkspaceParentsRequest,
    responses(
        (status = 200, description = "Successful Response", body = WorkspacesListResponse),
        (status = 409, description = "Workspaces file is corrupted", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn add_workspace_parents(
    State(state): State<SharedState>,
    ApiJson(body): ApiJson<AddWorkspaceParentsRequest>,
) -> Result<Json<WorkspacesListResponse>, ApiError> {
    check_parents(&body.parents)?;
    let doc = with_store(&state, "Failed to save workspaces", move |s| {
        s.add_parents(body.parents)
    })
    .await?;
    Ok(response(doc))
}

/// Remove a workspace parent by its absolute path.
#[utoipa::path(delete, path = "/workspaces/parents", tag = "Workspaces",
    operation_id = "delete_workspace_parent_api_workspaces_parents_delete",
    security(("APIKeyHeader" = [])),
    params(("path" = String, Query, description = "Absolute workspace parent path to remove")),
    responses(
        (status = 200, description = "Successful Response", body = DeleteResponse),
        (status = 404, description = "Workspace parent not found", body = crate::http::error::ErrorDetail),
        (status = 409, description = "Workspaces file is corrupted", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_workspace_parent(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<PathQuery>,
) -> Result<Json<DeleteResponse>, ApiError> {
    let removed = with_store(&state, "Failed to update workspaces", move |s| {
        s.remove_parent(&query.path)
    })
    .await?;
    if !removed {
        return Err(ApiError::not_found_msg("Workspace parent not found"));
    }
    Ok(Json(DeleteResponse { deleted: true }))
}
