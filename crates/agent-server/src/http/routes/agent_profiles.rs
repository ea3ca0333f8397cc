//! `/api/agent-profiles` (list, get, save, delete, rename, activate), mounted
//! under `/api` behind the session key. The service is
//! [`crate::service::agent_profiles`]. `materialize` is the dry run of a
//! launch ([`crate::service::profile_launch`]).

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::routes::profiles::name_issue;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `GET /api/agent-profiles` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentProfileListResponse {
    /// Summaries (`id`, `name`, `agent_kind`, `revision`, `llm_profile_ref`, `mcp_server_refs`).
    #[schema(value_type = Vec<Object>)]
    pub profiles: Vec<Value>,
    /// The active profile's id.
    pub active_agent_profile_id: Option<String>,
}

/// `GET /api/agent-profiles/{name}` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentProfileDetailResponse {
    /// Name.
    pub name: String,
    /// The stored profile.
    #[schema(value_type = Object)]
    pub profile: Value,
}

/// Save/delete/rename answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentProfileMutationResponse {
    /// Name.
    pub name: String,
    /// What happened.
    pub message: String,
}

/// Activation answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivateAgentProfileResponse {
    /// The activated id.
    pub id: String,
    /// What happened.
    pub message: String,
    /// Always false: activation only moves the pointer.
    pub agent_settings_applied: bool,
}

/// `POST /api/agent-profiles/{name}/rename` body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RenameAgentProfileRequest {
    /// The new name.
    pub new_name: String,
}

/// The agent-profile routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_agent_profiles))
        .routes(routes!(
            get_agent_profile,
            save_agent_profile,
            delete_agent_profile
        ))
        .routes(routes!(rename_agent_profile))
        .routes(routes!(activate_agent_profile))
        .routes(routes!(materialize_agent_profile))
}

fn check_name(loc: &[&str], name: &str) -> Result<(), ApiError> {
    match name_issue(loc, name) {
        Some(issue) => Err(ApiError::validation(vec![issue])),
        None => Ok(()),
    }
}

/// List all stored agent profiles and the active pointer (`default` is
/// seeded and activated when none is active).
#[utoipa::path(get, path = "/agent-profiles", tag = "Agent Profiles",
    operation_id = "list_agent_profiles_api_agent_profiles_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = AgentProfileListResponse)))]
pub async fn list_agent_profiles(
    State(state): State<SharedState>,
) -> Result<Json<Value>, ApiError> {
    let (profiles, active) = state.agent_profiles.list().await?;
    Ok(Json(
        json!({"profiles": profiles, "active_agent_profile_id": active}),
    ))
}

/// Get a stored profile.
#[utoipa::path(get, path = "/agent-profiles/{name}", tag = "Agent Profiles",
    operation_id = "get_agent_profile_api_agent_profiles__name__get",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses(
        (status = 200, description = "Successful Response", body = AgentProfileDetailResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn get_agent_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_name(&["path", "name"], &name)?;
    let profile = state.agent_profiles.get(&name).await?;
    Ok(Json(json!({"name": name, "profile": profile})))
}

/// Save a profile under `name` (the path name wins over the body's).
#[utoipa::path(post, path = "/agent-profiles/{name}", tag = "Agent Profiles",
    operation_id = "save_agent_profile_api_agent_profiles__name__post",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = Object,
    responses(
        (status = 201, description = "Successful Response", body = AgentProfileMutationResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn save_agent_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    check_name(&["path", "name"], &name)?;
    let Value::Object(body) = body else {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "dict_type",
            vec!["body".into()],
            "Input should be a valid dictionary",
            body,
        )]));
    };
    state.agent_profiles.save(&name, body).await?;
    tracing::info!(profile = %name, "agent profile saved");
    let body = json!({"name": name, "message": format!("Agent profile '{name}' saved")});
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Delete a profile (idempotent); deleting the active one activates `default`.
#[utoipa::path(delete, path = "/agent-profiles/{name}", tag = "Agent Profiles",
    operation_id = "delete_agent_profile_api_agent_profiles__name__delete",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses(
        (status = 200, description = "Successful Response", body = AgentProfileMutationResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_agent_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_name(&["path", "name"], &name)?;
    state.agent_profiles.delete(&name).await?;
    Ok(Json(
        json!({"name": name, "message": format!("Agent profile '{name}' deleted")}),
    ))
}

/// Rename a profile (its id and the active pointer stay).
#[utoipa::path(post, path = "/agent-profiles/{name}/rename", tag = "Agent Profiles",
    operation_id = "rename_agent_profile_api_agent_profiles__name__rename_post",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = RenameAgentProfileRequest,
    responses(
        (status = 200, description = "Successful Response", body = AgentProfileMutationResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn rename_agent_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<RenameAgentProfileRequest>,
) -> Result<Json<Value>, ApiError> {
    check_name(&["path", "name"], &name)?;
    check_name(&["body", "new_name"], &body.new_name)?;
    state.agent_profiles.rename(&name, &body.new_name).await?;
    let message = if name == body.new_name {
        format!("Agent profile '{name}' unchanged (same name)")
    } else {
        format!("Agent profile '{name}' renamed to '{}'", body.new_name)
    };
    Ok(Json(json!({"name": body.new_name, "message": message})))
}

/// Activate a profile by its id (pointer only; the agent settings stay).
#[utoipa::path(post, path = "/agent-profiles/{profile_id}/activate", tag = "Agent Profiles",
    operation_id = "activate_agent_profile_api_agent_profiles__profile_id__activate_post",
    security(("APIKeyHeader" = [])),
    params(("profile_id" = String, Path, min_length = 1, max_length = 128)),
    responses(
        (status = 200, description = "Successful Response", body = ActivateAgentProfileResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn activate_agent_profile(
    State(state): State<SharedState>,
    Path(profile_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if profile_id.is_empty() || profile_id.chars().count() > 128 {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "string_too_long",
            vec!["path".into(), "profile_id".into()],
            "String should have at most 128 characters",
            Value::String(profile_id),
        )]));
    }
    state.agent_profiles.activate(&profile_id).await?;
    Ok(Json(json!({
        "id": profile_id,
        "message": format!("Agent profile '{profile_id}' activated"),
        "agent_settings_applied": false,
    })))
}

/// Preview the launch of a stored profile, or of the draft in `profile`:
/// the reference's `AgentProfileDiagnostics` (dangling references are
/// reported in the body; `resolved_settings` is redacted).
#[utoipa::path(post, path = "/agent-profiles/{name}/materialize", tag = "Agent Profiles",
    operation_id = "materialize_agent_profile_api_agent_profiles__name__materialize_post",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body(content = Option<Object>, description = "`{\"profile\": <draft>}` to preview a draft instead of the stored profile"),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "Agent profile not found", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn materialize_agent_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    headers: axum::http::HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    check_name(&["path", "name"], &name)?;
    let draft = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let ct = headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        match crate::http::extract::parse_json_body(&bytes, ct.as_deref())? {
            Value::Null => None,
            Value::Object(mut body) => {
                if let Some(extra) = body.keys().find(|k| k.as_str() != "profile") {
                    return Err(ApiError::validation(vec![ValidationIssue::new(
                        "extra_forbidden",
                        vec!["body".into(), extra.as_str().into()],
                        "Extra inputs are not permitted",
                        body[extra.as_str()].clone(),
                    )]));
                }
                match body.remove("profile") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(p)) => Some(p),
                    Some(other) => {
                        return Err(ApiError::validation(vec![ValidationIssue::new(
                            "dict_type",
                            vec!["body".into(), "profile".into()],
                            "Input should be a valid dictionary",
                            other,
                        )]));
                    }
                }
            }
            other => {
                return Err(ApiError::validation(vec![ValidationIssue::new(
                    "model_attributes_type",
                    vec!["body".into()],
                    "Input should be a valid dictionary or object to extract fields from",
                    other,
                )]));
            }
        }
    };
    let launcher = crate::service::profile_launch::ProfileLauncher::new(
        state.agent_profiles.clone(),
        state.profiles.clone(),
        state.settings.clone(),
        crate::http::routes::catalogs::skill_sources(&state),
        state.meta_profiles.clone(),
    );
    Ok(Json(launcher.materialize(&name, draft).await?))
}
