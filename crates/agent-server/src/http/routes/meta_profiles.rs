//! `/api/meta-profiles` (list, get, save, delete, activate), mounted under
//! `/api` behind the session key. The service is
//! [`crate::service::meta_profiles`].

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::routes::profiles::name_issue;
use crate::http::state::SharedState;
use crate::service::meta_profiles::MetaProfile;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `GET /api/meta-profiles` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetaProfileListResponse {
    /// Summaries (`name`, `classifier_model`, `num_classes`).
    #[schema(value_type = Vec<Object>)]
    pub meta_profiles: Vec<Value>,
    /// The active meta-profile.
    pub active_meta_profile: Option<String>,
}

/// `GET /api/meta-profiles/{name}` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetaProfileDetailResponse {
    /// Name.
    pub name: String,
    /// The configuration.
    #[schema(value_type = Object)]
    pub config: Value,
}

/// Save/delete answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetaProfileMutationResponse {
    /// Name.
    pub name: String,
    /// What happened.
    pub message: String,
}

/// Activation answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivateMetaProfileResponse {
    /// Name.
    pub name: String,
    /// What happened.
    pub message: String,
    /// False when the agent settings cannot route between models.
    pub applied: bool,
}

/// The meta-profile routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_meta_profiles))
        .routes(routes!(
            get_meta_profile,
            save_meta_profile,
            delete_meta_profile
        ))
        .routes(routes!(activate_meta_profile))
}

fn check_name(name: &str) -> Result<(), ApiError> {
    match name_issue(&["path", "name"], name) {
        Some(issue) => Err(ApiError::validation(vec![issue])),
        None => Ok(()),
    }
}

/// List all saved meta-profiles and the active one.
#[utoipa::path(get, path = "/meta-profiles", tag = "Meta-profiles",
    operation_id = "list_meta_profiles_api_meta_profiles_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = MetaProfileListResponse)))]
pub async fn list_meta_profiles(State(state): State<SharedState>) -> Result<Json<Value>, ApiError> {
    let list = state.meta_profiles.list().await?;
    let active = state.settings.load().await?.active_meta_profile;
    Ok(Json(
        json!({"meta_profiles": list, "active_meta_profile": active}),
    ))
}

/// Get a meta-profile's configuration.
#[utoipa::path(get, path = "/meta-profiles/{name}", tag = "Meta-profiles",
    operation_id = "get_meta_profile_api_meta_profiles__name__get",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses(
        (status = 200, description = "Successful Response", body = MetaProfileDetailResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn get_meta_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_name(&name)?;
    let config = state.meta_profiles.get(&name).await?;
    Ok(Json(json!({"name": name, "config": config})))
}

/// Save (create or overwrite) a meta-profile.
#[utoipa::path(post, path = "/meta-profiles/{name}", tag = "Meta-profiles",
    operation_id = "save_meta_profile_api_meta_profiles__name__post",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = Object,
    responses(
        (status = 201, description = "Successful Response", body = MetaProfileMutationResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn save_meta_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<MetaProfile>,
) -> Result<Response, ApiError> {
    check_name(&name)?;
    if let Err(message) = body.check(true) {
        let input = serde_json::to_value(&body).unwrap_or_default();
        return Err(ApiError::validation(vec![
            ValidationIssue::new(
                "value_error",
                vec!["body".into()],
                format!("Value error, {message}"),
                input,
            )
            .with_ctx(json!({"error": message.to_string()})),
        ]));
    }
    state.meta_profiles.save(&name, body).await?;
    let body = json!({"name": name, "message": format!("Meta-profile '{name}' saved")});
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Delete a meta-profile (idempotent; an active one is deactivated).
#[utoipa::path(delete, path = "/meta-profiles/{name}", tag = "Meta-profiles",
    operation_id = "delete_meta_profile_api_meta_profiles__name__delete",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses(
        (status = 200, description = "Successful Response", body = MetaProfileMutationResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_meta_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_name(&name)?;
    state.meta_profiles.delete(&name, &state.settings).await?;
    Ok(Json(
        json!({"name": name, "message": format!("Meta-profile '{name}' deleted")}),
    ))
}

/// Activate a meta-profile (recorded as `active_meta_profile`; the LLM is
/// not changed).
#[utoipa::path(post, path = "/meta-profiles/{name}/activate", tag = "Meta-profiles",
    operation_id = "activate_meta_profile_api_meta_profiles__name__activate_post",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses(
        (status = 200, description = "Successful Response", body = ActivateMetaProfileResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn activate_meta_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_name(&name)?;
    let applied = state.meta_profiles.activate(&name, &state.settings).await?;
    let message = if applied {
        format!("Meta-profile '{name}' activated")
    } else {
        format!(
            "Meta-profile '{name}' not activated: the current agent settings cannot route between models"
        )
    };
    Ok(Json(
        json!({"name": name, "message": message, "applied": applied}),
    ))
}
