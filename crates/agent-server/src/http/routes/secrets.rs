//! `/api/settings/secrets` (list, upsert) and `/api/settings/secrets/{name}`
//! (plain-text value for `LookupSecret`s, delete) — behind the session key.

use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::SharedState;
use crate::service::secrets_store::{SecretsError, SecretsStore, valid_secret_name};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use openhands_wire::secret::REDACTED;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A secret's name and description (never its value).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SecretItemResponse {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
}

/// `GET /api/settings/secrets` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SecretsListResponse {
    /// The secrets.
    pub secrets: Vec<SecretItemResponse>,
}

/// `PUT /api/settings/secrets` body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SecretCreateRequest {
    /// Name: a letter, then letters, digits or `_` (1–64).
    pub name: String,
    /// The value (stored encrypted).
    pub value: String,
    /// Optional description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `?agent_profile_id=` of the list.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    /// Restrict to the secrets an agent profile may use.
    #[serde(default)]
    pub agent_profile_id: Option<String>,
}

const UNREADABLE: &str = "Secrets file is corrupted or encrypted with a different key: restore that key as OH_SECRET_KEY or add it to OH_PREVIOUS_SECRET_KEYS";

fn bad_name() -> ApiError {
    ApiError::unprocessable(
        "Invalid secret name format. Must start with a letter, contain only letters, numbers, and underscores, and be 1-64 characters long.",
    )
}

fn not_found() -> ApiError {
    ApiError::not_found_msg("Secret not found")
}

fn store_error(e: SecretsError, io_detail: &str) -> ApiError {
    tracing::error!(error = %e, "secrets store");
    let detail = match e {
        SecretsError::Unreadable(_) => UNREADABLE,
        SecretsError::Io(_) => io_detail,
    };
    ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, detail)
}

/// Runs a blocking store operation off the runtime.
async fn blocking<R: Send + 'static>(
    store: &SecretsStore,
    f: impl FnOnce(&SecretsStore) -> R + Send + 'static,
) -> Result<R, ApiError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(ApiError::internal)
}

/// List available secret names, optionally scoped by an agent profile.
#[utoipa::path(get, path = "/settings/secrets", tag = "Settings",
    operation_id = "list_secrets_api_settings_secrets_get",
    summary = "List Secrets",
    security(("APIKeyHeader" = [])),
    params(("agent_profile_id" = Option<String>, Query, description = "Only the secrets this agent profile may use")),
    responses(
        (status = 200, description = "Successful Response", body = SecretsListResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn list_secrets(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SecretsListResponse>, ApiError> {
    let allowed = match &query.agent_profile_id {
        None => None,
        Some(id) => match state.agent_profiles.secret_refs(id).await {
            Ok(refs) => refs,
            Err(crate::service::agent_profiles::AgentProfileError::IdNotFound(_)) => {
                return Err(ApiError::not_found_msg("Agent profile not found"));
            }
            Err(e) => return Err(e.into()),
        },
    };
    let items = blocking(&state.secrets, |s| s.list())
        .await?
        .map_err(|e| store_error(e, "Failed to list secrets"))?;
    Ok(Json(SecretsListResponse {
        secrets: items
            .into_iter()
            .filter(|i| allowed.as_ref().is_none_or(|names| names.contains(&i.name)))
            .map(|i| SecretItemResponse {
                name: i.name,
                description: i.description,
            })
            .collect(),
    }))
}

/// Create or update a custom secret (upsert).
#[utoipa::path(put, path = "/settings/secrets", tag = "Settings",
    operation_id = "create_secret_api_settings_secrets_put",
    summary = "Create Secret",
    security(("APIKeyHeader" = [])),
    request_body = SecretCreateRequest,
    responses(
        (status = 200, description = "Successful Response", body = SecretItemResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn create_secret(
    State(state): State<SharedState>,
    ApiJson(req): ApiJson<SecretCreateRequest>,
) -> Result<Json<SecretItemResponse>, ApiError> {
    if !valid_secret_name(&req.name) {
        return Err(bad_name());
    }
    if req.value.trim().is_empty() || req.value == REDACTED {
        return Err(ApiError::unprocessable(
            "Secret value must not be empty or redacted",
        ));
    }
    let (name, value, description) = (req.name.clone(), req.value, req.description.clone());
    blocking(&state.secrets, move |s| {
        s.set(&name, &value, description.as_deref())
    })
    .await?
    .map_err(|e| store_error(e, "Failed to save secret"))?;
    tracing::info!(secret_name = %req.name, "secret created/updated");
    Ok(Json(SecretItemResponse {
        name: req.name,
        description: req.description,
    }))
}

/// Get a single secret value by name, as plain text (for `LookupSecret`).
#[utoipa::path(get, path = "/settings/secrets/{name}", tag = "Settings",
    operation_id = "get_secret_value_api_settings_secrets__name__get",
    summary = "Get Secret Value",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, description = "Secret name")),
    responses(
        (status = 200, description = "Successful Response", body = String, content_type = "text/plain"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn get_secret_value(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    if !valid_secret_name(&name) {
        return Err(bad_name());
    }
    let lookup = name.clone();
    let value = blocking(&state.secrets, move |s| s.get(&lookup))
        .await?
        .map_err(|e| store_error(e, "Failed to read secret"))?;
    match value {
        Some(v) => {
            tracing::info!(secret_name = %name, "secret accessed");
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], v).into_response())
        }
        None => {
            tracing::warn!(secret_name = %name, "secret access failed - not found");
            Err(not_found())
        }
    }
}

/// Delete a custom secret by name.
#[utoipa::path(delete, path = "/settings/secrets/{name}", tag = "Settings",
    operation_id = "delete_secret_api_settings_secrets__name__delete",
    summary = "Delete Secret",
    security(("APIKeyHeader" = [])),
    params(("name" = String, Path, description = "Secret name")),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_secret(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    if !valid_secret_name(&name) {
        return Err(bad_name());
    }
    let target = name.clone();
    let deleted = blocking(&state.secrets, move |s| s.delete(&target))
        .await?
        .map_err(|e| store_error(e, "Failed to delete secret"))?;
    if !deleted {
        tracing::warn!(secret_name = %name, "secret deletion failed - not found");
        return Err(not_found());
    }
    Ok(Json(serde_json::json!({"deleted": true})))
}
