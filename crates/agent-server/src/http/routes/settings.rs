//! `GET|PATCH /api/settings` and the two settings form schemas (mounted
//! under `/api`, behind the session key). The service is
//! [`crate::service::settings`].

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::routes::profiles::{NAME_PATTERN, expose_mode};
use crate::http::state::SharedState;
use crate::service::settings::{SettingsAnswer, SettingsPatch, schema};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// The UUID pattern of `active_agent_profile_id`.
const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// `GET /api/settings` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsResponse {
    /// Agent settings (secrets redacted unless `X-Expose-Secrets`).
    #[schema(value_type = Object)]
    pub agent_settings: Value,
    /// Conversation settings.
    #[schema(value_type = Object)]
    pub conversation_settings: Value,
    /// Whether an LLM API key is configured.
    pub llm_api_key_is_set: bool,
    /// The active LLM profile.
    pub active_profile: Option<String>,
    /// The active agent profile id.
    pub active_agent_profile_id: Option<String>,
    /// The active meta-profile.
    pub active_meta_profile: Option<String>,
    /// Opaque front-end data.
    #[schema(value_type = Object)]
    pub misc_settings: Value,
}

/// `PATCH /api/settings` body.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct SettingsUpdateRequest {
    /// RFC 7386 merge patch of the agent settings.
    #[schema(value_type = Option<Object>)]
    agent_settings_diff: Option<Value>,
    /// Deep-merge diff of the conversation settings.
    #[schema(value_type = Option<Object>)]
    conversation_settings_diff: Option<Value>,
    /// Deep-merge diff of `misc_settings`.
    #[schema(value_type = Option<Object>)]
    misc_settings_diff: Option<Value>,
    /// The active LLM profile (its LLM is applied); null clears.
    active_profile: Option<String>,
    /// The active agent profile id; null clears.
    active_agent_profile_id: Option<String>,
    /// The active meta-profile; null clears.
    active_meta_profile: Option<String>,
}

/// A settings form description.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsSchema {
    /// The settings model.
    pub model_name: String,
    /// Form sections.
    #[schema(value_type = Vec<Object>)]
    pub sections: Vec<Value>,
}

/// The settings routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(get_settings, update_settings))
        .routes(routes!(get_agent_settings_schema))
        .routes(routes!(get_conversation_settings_schema))
}

/// Return the schema used to render AgentSettings-based settings forms.
#[utoipa::path(get, path = "/settings/agent-schema", tag = "Settings",
    operation_id = "get_agent_settings_schema_api_settings_agent_schema_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SettingsSchema)))]
pub async fn get_agent_settings_schema() -> Json<Value> {
    Json(schema::agent())
}

/// Return the schema used to render ConversationSettings-based forms.
#[utoipa::path(get, path = "/settings/conversation-schema", tag = "Settings",
    operation_id = "get_conversation_settings_schema_api_settings_conversation_schema_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SettingsSchema)))]
pub async fn get_conversation_settings_schema() -> Json<Value> {
    Json(schema::conversation())
}

/// Get current settings (`X-Expose-Secrets: encrypted|plaintext` controls
/// secret exposure; absent, secrets are redacted).
#[utoipa::path(get, path = "/settings", tag = "Settings",
    operation_id = "get_settings_api_settings_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SettingsResponse)))]
pub async fn get_settings(
    State(state): State<SharedState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let expose = expose_mode(&headers)?;
    let settings = state.settings.load().await.map_err(|e| {
        // A stored file this server cannot read is a server-side problem here.
        match e {
            crate::service::settings::SettingsError::Corrupt(reason) => {
                tracing::error!(%reason, "settings file unusable");
                ApiError::internal("settings file cannot be loaded")
            }
            other => other.into(),
        }
    })?;
    tracing::info!(expose_mode = ?expose, "settings accessed");
    Ok(Json(settings.response(expose, state.settings.cipher())?))
}

/// Update settings with partial changes (`agent_settings_diff`,
/// `conversation_settings_diff`, `misc_settings_diff`, the profile
/// pointers).
#[utoipa::path(patch, path = "/settings", tag = "Settings",
    operation_id = "update_settings_api_settings_patch",
    security(("APIKeyHeader" = [])),
    request_body = SettingsUpdateRequest,
    responses(
        (status = 200, description = "Successful Response", body = SettingsResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn update_settings(
    State(state): State<SharedState>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let patch = parse_patch(body)?;
    if patch.is_empty() {
        return Err(ApiError::bad_request(
            "At least one of agent_settings_diff, conversation_settings_diff, misc_settings_diff, active_profile, active_agent_profile_id, or active_meta_profile must be provided",
        ));
    }
    let settings = state.settings.update(patch).await.map_err(|e| {
        tracing::warn!(error = %e, "settings update refused");
        ApiError::from(e)
    })?;
    tracing::info!("settings updated");
    Ok(Json(settings.response(None, state.settings.cipher())?))
}

/// The request body as a [`SettingsPatch`], or pydantic-shaped issues.
fn parse_patch(body: Value) -> Result<SettingsPatch, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            body,
        )]));
    };
    let mut issues = Vec::new();
    let mut map = |key: &str| -> Option<Map<String, Value>> {
        match body.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => {
                issues.push(ValidationIssue::new(
                    "dict_type",
                    vec!["body".into(), key.into()],
                    "Input should be a valid dictionary",
                    other.clone(),
                ));
                None
            }
        }
    };
    let agent_settings_diff = map("agent_settings_diff");
    let conversation_settings_diff = map("conversation_settings_diff");
    let misc_settings_diff = map("misc_settings_diff");
    let mut pointer = |key: &str, pattern: &str| -> Option<Option<String>> {
        match body.get(key) {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => {
                if !regex_lite_match(pattern, s) {
                    issues.push(ValidationIssue::pattern_mismatch(
                        vec!["body".into(), key.into()],
                        Value::String(s.clone()),
                        pattern,
                    ));
                }
                Some(Some(s.clone()))
            }
            Some(other) => {
                issues.push(ValidationIssue::new(
                    "string_type",
                    vec!["body".into(), key.into()],
                    "Input should be a valid string",
                    other.clone(),
                ));
                None
            }
        }
    };
    let active_profile = pointer("active_profile", NAME_PATTERN);
    let active_agent_profile_id = pointer("active_agent_profile_id", UUID_PATTERN);
    let active_meta_profile = pointer("active_meta_profile", NAME_PATTERN);
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    Ok(SettingsPatch {
        agent_settings_diff,
        conversation_settings_diff,
        misc_settings_diff,
        active_profile,
        active_agent_profile_id,
        active_meta_profile,
    })
}

/// The two patterns of this module, checked without a regex engine.
fn regex_lite_match(pattern: &str, s: &str) -> bool {
    if pattern == UUID_PATTERN {
        return uuid::Uuid::try_parse(s).is_ok() && s.len() == 36;
    }
    crate::http::routes::profiles::name_issue(&["body"], s).is_none()
}
