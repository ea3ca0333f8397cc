//! `/api/profiles` routes (mounted under `/api`, behind the session key).

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::profiles::{Expose, ProfileError, ProfileService};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use openhands_wire::LlmConfig;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;

/// The pattern profile names must match.
pub const NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";

fn d_true() -> bool {
    true
}

/// `POST /api/profiles/{name}` body.
#[derive(Debug, Deserialize)]
pub struct SaveProfileRequest {
    /// The LLM configuration.
    pub llm: LlmConfig,
    /// Store the API key (encrypted) with the profile.
    #[serde(default = "d_true")]
    pub include_secrets: bool,
}

/// `POST /api/profiles/{name}/validate` body.
#[derive(Debug, Deserialize)]
pub struct ValidateProfileRequest {
    /// The draft configuration.
    pub llm: LlmConfig,
}

/// `POST /api/profiles/{name}/rename` body.
#[derive(Debug, Deserialize)]
pub struct RenameProfileRequest {
    /// The new name.
    pub new_name: String,
}

/// The profile routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_profiles))
        .routes(routes!(get_profile, save_profile, delete_profile))
        .routes(routes!(validate_profile))
        .routes(routes!(rename_profile))
        .routes(routes!(activate_profile))
}

fn matches_pattern(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {
            name.len() <= 64
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        }
        _ => false,
    }
}

/// Checks a name against the reference's constraints (1-64 characters,
/// [`NAME_PATTERN`]) and reports a failure like pydantic.
pub fn name_issue(loc: &[&str], name: &str) -> Option<ValidationIssue> {
    let loc: Vec<_> = loc.iter().map(|p| (*p).into()).collect();
    let input = Value::String(name.to_string());
    let chars = name.chars().count();
    if chars < 1 {
        return Some(
            ValidationIssue::new(
                "string_too_short",
                loc,
                "String should have at least 1 character",
                input,
            )
            .with_ctx(json!({"min_length": 1})),
        );
    }
    if chars > 64 {
        return Some(
            ValidationIssue::new(
                "string_too_long",
                loc,
                "String should have at most 64 characters",
                input,
            )
            .with_ctx(json!({"max_length": 64})),
        );
    }
    if !matches_pattern(name) {
        return Some(ValidationIssue::pattern_mismatch(loc, input, NAME_PATTERN));
    }
    None
}

fn check_path_name(name: &str) -> Result<(), ApiError> {
    match name_issue(&["path", "name"], name) {
        Some(issue) => Err(ApiError::validation(vec![issue])),
        None => Ok(()),
    }
}

fn profiles(state: &SharedState) -> &ProfileService {
    &state.profiles
}

/// The `X-Expose-Secrets` header (`true` is the legacy spelling of
/// `encrypted`); another value is a 400.
pub fn expose_mode(headers: &HeaderMap) -> Result<Option<Expose>, ApiError> {
    let raw = headers
        .get("X-Expose-Secrets")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match raw.as_str() {
        "" => Ok(None),
        "true" | "encrypted" => Ok(Some(Expose::Encrypted)),
        "plaintext" => Ok(Some(Expose::Plaintext)),
        other => Err(ApiError::bad_request(format!(
            "Invalid X-Expose-Secrets header value: '{other}'. Valid values are: 'encrypted', 'plaintext'."
        ))),
    }
}

/// List all saved LLM profiles and the active one.
#[utoipa::path(get, path = "/profiles", tag = "Profiles",
    operation_id = "list_profiles_api_profiles_get", security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ProfileListResponse)))]
pub async fn list_profiles(State(state): State<SharedState>) -> Result<Json<Value>, ApiError> {
    let list = profiles(&state).list().await?;
    Ok(Json(json!(list)))
}

/// Get a profile's configuration (`X-Expose-Secrets: encrypted|plaintext`
/// controls secret exposure; absent, `api_key` is null).
#[utoipa::path(get, path = "/profiles/{name}", tag = "Profiles",
    operation_id = "get_profile_api_profiles__name__get", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ProfileDetailResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn get_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    check_path_name(&name)?;
    let expose = expose_mode(&headers)?;
    let svc = profiles(&state);
    let stored = svc.load(&name, expose == Some(Expose::Plaintext)).await?;
    let config = svc
        .detail_config(&stored.config, expose)
        .map_err(|e| match e {
            ProfileError::NoCipher => ApiError::service_unavailable(
                "Encryption not available: OH_SECRET_KEY is not configured. Cannot return encrypted secrets.",
            ),
            other => other.into(),
        })?;
    Ok(Json(json!({
        "name": name,
        "config": config,
        "api_key_set": stored.api_key_set,
    })))
}

/// Save an LLM configuration as a named profile (overwrites; secrets are
/// encrypted at rest).
#[utoipa::path(post, path = "/profiles/{name}", tag = "Profiles",
    operation_id = "save_profile_api_profiles__name__post", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = super::profiles_docs::SaveProfileRequest,
    responses((status = 201, description = "Successful Response", body = super::profiles_docs::ProfileMutationResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn save_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<SaveProfileRequest>,
) -> Result<Response, ApiError> {
    check_path_name(&name)?;
    profiles(&state)
        .save(&name, body.llm, body.include_secrets)
        .await?;
    tracing::info!(profile = %name, include_secrets = body.include_secrets, "profile saved");
    let body = json!({"name": name, "message": format!("Profile '{name}' saved")});
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Delete a saved profile (idempotent).
#[utoipa::path(delete, path = "/profiles/{name}", tag = "Profiles",
    operation_id = "delete_profile_api_profiles__name__delete", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ProfileMutationResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_path_name(&name)?;
    profiles(&state).delete(&name).await?;
    Ok(Json(
        json!({"name": name, "message": format!("Profile '{name}' deleted")}),
    ))
}

/// Pre-flight check: one minimal completion against the draft configuration.
#[utoipa::path(post, path = "/profiles/{name}/validate", tag = "Profiles",
    operation_id = "validate_profile_api_profiles__name__validate_post", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = super::profiles_docs::ValidateProfileRequest,
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ValidateProfileResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn validate_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<ValidateProfileRequest>,
) -> Result<Json<Value>, ApiError> {
    check_path_name(&name)?;
    let mut llm = body.llm;
    if let Some(c) = profiles(&state).cipher() {
        crate::service::profiles::llm_json::decrypt_incoming(&mut llm, c);
    }
    let result = crate::service::profiles::validate::preflight(llm).await;
    Ok(Json(json!(result)))
}

/// Rename a saved profile (404 when missing, 409 when the new name exists).
#[utoipa::path(post, path = "/profiles/{name}/rename", tag = "Profiles",
    operation_id = "rename_profile_api_profiles__name__rename_post", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    request_body = super::profiles_docs::RenameProfileRequest,
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ProfileMutationResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn rename_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<RenameProfileRequest>,
) -> Result<Json<Value>, ApiError> {
    let mut issues = Vec::new();
    issues.extend(name_issue(&["path", "name"], &name));
    issues.extend(name_issue(&["body", "new_name"], &body.new_name));
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let new = body.new_name;
    profiles(&state)
        .rename(&name, &new)
        .await
        .map_err(|e| match e {
            ProfileError::Store(crate::service::profiles::StoreError::NotFound(_)) => {
                ApiError::not_found_msg(format!("Profile '{name}' not found"))
            }
            other => other.into(),
        })?;
    let message = if name == new {
        format!("Profile '{name}' unchanged (same name)")
    } else {
        format!("Profile '{name}' renamed to '{new}'")
    };
    Ok(Json(json!({"name": new, "message": message})))
}

/// Activate a saved profile (recorded as `active_profile`).
#[utoipa::path(post, path = "/profiles/{name}/activate", tag = "Profiles",
    operation_id = "activate_profile_api_profiles__name__activate_post", security(("APIKeyHeader" = [])), params(("name" = String, Path, min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")),
    responses((status = 200, description = "Successful Response", body = super::profiles_docs::ActivateProfileResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn activate_profile(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_path_name(&name)?;
    let applied = profiles(&state).activate(&name).await?;
    let message = if applied {
        format!("Profile '{name}' activated and applied to current settings")
    } else {
        format!("Profile '{name}' activated")
    };
    Ok(Json(
        json!({"name": name, "message": message, "llm_applied": applied}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_constraints() {
        assert!(name_issue(&["path", "name"], "gateway_demo").is_none());
        assert!(name_issue(&["path", "name"], "a.b-c_9").is_none());
        let long = "a".repeat(65);
        assert_eq!(
            name_issue(&["path", "name"], &long).unwrap().kind,
            "string_too_long"
        );
        for bad in ["..", ".x", "a/b", "a b", "é"] {
            assert_eq!(
                name_issue(&["path", "name"], bad).unwrap().kind,
                "string_pattern_mismatch",
                "{bad}"
            );
        }
        assert_eq!(
            name_issue(&["body", "new_name"], "").unwrap().kind,
            "string_too_short"
        );
    }

    #[test]
    fn expose_header_values() {
        let mut h = HeaderMap::new();
        assert_eq!(expose_mode(&h).unwrap(), None);
        h.insert("X-Expose-Secrets", "Plaintext".parse().unwrap());
        assert_eq!(expose_mode(&h).unwrap(), Some(Expose::Plaintext));
        h.insert("X-Expose-Secrets", "true".parse().unwrap());
        assert_eq!(expose_mode(&h).unwrap(), Some(Expose::Encrypted));
        h.insert("X-Expose-Secrets", "yes".parse().unwrap());
        assert_eq!(
            expose_mode(&h).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }
}
