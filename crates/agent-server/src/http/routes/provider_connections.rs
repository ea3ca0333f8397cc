//! `/api/llm/provider-connections` (list, create, update, delete), mounted
//! under `/api` behind the session key. The service is
//! [`crate::service::provider_connections`]; answers never carry a key.

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::provider_connections::{ConnectionUpdate, ConnectionView};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openhands_wire::secret::REDACTED;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// A provider connection (never its key).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderConnectionResponse {
    /// Id.
    pub id: String,
    /// Display name.
    pub display_name: String,
    /// Provider label.
    pub provider: String,
    /// Base URL.
    pub base_url: Option<String>,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last change (Unix seconds).
    pub updated_at: i64,
    /// Whether a usable key is stored.
    pub api_key_set: bool,
}

/// The provider-connection routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(
            list_provider_connections,
            create_provider_connection
        ))
        .routes(routes!(
            update_provider_connection,
            delete_provider_connection
        ))
}

fn at(key: &str) -> Vec<crate::http::error::LocPart> {
    vec!["body".into(), key.into()]
}

/// A string field with the reference's length limits; `Ok(None)` when absent.
fn text(
    body: &Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
    issues: &mut Vec<ValidationIssue>,
) -> Option<Option<String>> {
    match body.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) => {
            let n = s.chars().count();
            if n < min {
                issues.push(
                    ValidationIssue::new(
                        "string_too_short",
                        at(key),
                        format!("String should have at least {min} character"),
                        json!(s),
                    )
                    .with_ctx(json!({"min_length": min})),
                );
            } else if n > max {
                issues.push(
                    ValidationIssue::new(
                        "string_too_long",
                        at(key),
                        format!("String should have at most {max} characters"),
                        json!(s),
                    )
                    .with_ctx(json!({"max_length": max})),
                );
            }
            Some(Some(s.clone()))
        }
        Some(other) => {
            issues.push(ValidationIssue::new(
                "string_type",
                at(key),
                "Input should be a valid string",
                other.clone(),
            ));
            None
        }
    }
}

fn check_body(
    body: Value,
    allowed: &[&str],
) -> Result<(Map<String, Value>, Vec<ValidationIssue>), ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            body,
        )]));
    };
    let mut issues = Vec::new();
    for (k, v) in &body {
        if !allowed.contains(&k.as_str()) {
            issues.push(ValidationIssue::new(
                "extra_forbidden",
                at(k),
                "Extra inputs are not permitted",
                v.clone(),
            ));
        }
    }
    Ok((body, issues))
}

fn key_issue(key: &str) -> Option<ValidationIssue> {
    if key.trim().is_empty() || key == REDACTED {
        let msg = "api_key must be a real key, not blank or redacted";
        return Some(
            ValidationIssue::new(
                "value_error",
                at("api_key"),
                format!("Value error, {msg}"),
                json!("**********"),
            )
            .with_ctx(json!({"error": msg})),
        );
    }
    None
}

fn answer(v: ConnectionView) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// List the provider connections.
#[utoipa::path(get, path = "/llm/provider-connections", tag = "LLM Provider Connections",
    operation_id = "list_provider_connections_api_llm_provider_connections_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Vec<ProviderConnectionResponse>)))]
pub async fn list_provider_connections(
    State(state): State<SharedState>,
) -> Result<Json<Value>, ApiError> {
    let list = state.provider_connections.list().await?;
    Ok(Json(json!(list)))
}

/// Create a provider connection (`display_name`, `provider`, `api_key`,
/// `base_url`); the key is encrypted at rest.
#[utoipa::path(post, path = "/llm/provider-connections", tag = "LLM Provider Connections",
    operation_id = "create_provider_connection_api_llm_provider_connections_post",
    security(("APIKeyHeader" = [])),
    request_body = Object,
    responses(
        (status = 201, description = "Successful Response", body = ProviderConnectionResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn create_provider_connection(
    State(state): State<SharedState>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let (body, mut issues) =
        check_body(body, &["display_name", "provider", "api_key", "base_url"])?;
    let display_name = text(&body, "display_name", 1, 128, &mut issues);
    let provider = text(&body, "provider", 1, 128, &mut issues);
    let api_key = text(&body, "api_key", 1, usize::MAX, &mut issues);
    let base_url = text(&body, "base_url", 0, 2048, &mut issues);
    let input = Value::Object(body.clone());
    let display_name = match display_name {
        Some(Some(v)) => v,
        _ => {
            issues.push(ValidationIssue::new(
                "missing",
                at("display_name"),
                "Field required",
                input.clone(),
            ));
            String::new()
        }
    };
    let api_key = match api_key {
        Some(Some(v)) => {
            issues.extend(key_issue(&v));
            v
        }
        _ => {
            issues.push(ValidationIssue::new(
                "missing",
                at("api_key"),
                "Field required",
                input,
            ));
            String::new()
        }
    };
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let provider = provider.flatten().unwrap_or_else(|| "custom".into());
    let created = state
        .provider_connections
        .create(display_name, provider, api_key, base_url.flatten())
        .await?;
    tracing::info!(connection_id = %created.id, "created LLM provider connection");
    Ok((StatusCode::CREATED, Json(answer(created))).into_response())
}

/// Change a provider connection's fields (a new `api_key` rotates it).
#[utoipa::path(patch, path = "/llm/provider-connections/{connection_id}", tag = "LLM Provider Connections",
    operation_id = "update_provider_connection_api_llm_provider_connections__connection_id__patch",
    security(("APIKeyHeader" = [])),
    params(("connection_id" = String, Path)),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = ProviderConnectionResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn update_provider_connection(
    State(state): State<SharedState>,
    Path(connection_id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let (body, mut issues) =
        check_body(body, &["display_name", "provider", "api_key", "base_url"])?;
    let display_name = text(&body, "display_name", 1, 128, &mut issues);
    let provider = text(&body, "provider", 1, 128, &mut issues);
    let api_key = text(&body, "api_key", 0, usize::MAX, &mut issues);
    let base_url = text(&body, "base_url", 0, 2048, &mut issues);
    if let Some(Some(k)) = &api_key {
        issues.extend(key_issue(k));
    }
    for (field, value) in [("display_name", &display_name), ("provider", &provider)] {
        if matches!(value, Some(None)) && issues.is_empty() {
            let msg = format!("{field} cannot be set to null");
            issues.push(
                ValidationIssue::new(
                    "value_error",
                    vec!["body".into()],
                    format!("Value error, {msg}"),
                    Value::Object(body.clone()),
                )
                .with_ctx(json!({"error": msg})),
            );
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    if body.is_empty() {
        return Err(ApiError::unprocessable(
            "Provide at least one provider connection field to update",
        ));
    }
    let api_key = match api_key {
        Some(None) => {
            return Err(ApiError::unprocessable(
                "api_key cannot be cleared; provide a new key to rotate it",
            ));
        }
        other => other.flatten(),
    };
    let update = ConnectionUpdate {
        display_name: display_name.flatten(),
        provider: provider.flatten(),
        base_url,
        api_key,
    };
    let updated = state
        .provider_connections
        .update(&connection_id, update)
        .await?;
    Ok(Json(answer(updated)))
}

/// Delete a provider connection no profile or active settings refer to.
#[utoipa::path(delete, path = "/llm/provider-connections/{connection_id}", tag = "LLM Provider Connections",
    operation_id = "delete_provider_connection_api_llm_provider_connections__connection_id__delete",
    security(("APIKeyHeader" = [])),
    params(("connection_id" = String, Path)),
    responses(
        (status = 200, description = "Successful Response", body = ProviderConnectionResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn delete_provider_connection(
    State(state): State<SharedState>,
    Path(connection_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let deleted = state.provider_connections.delete(&connection_id).await?;
    Ok(Json(answer(deleted)))
}
