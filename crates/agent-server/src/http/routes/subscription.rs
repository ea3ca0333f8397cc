//! `/api/llm/subscription/openai/*`: ChatGPT subscription sign-in by device
//! code ([`crate::service::subscription`]). Answers never carry tokens.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::subscription::{
    DeviceStart, OpenAiSubscription, SubscriptionError, SubscriptionStatus,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `POST .../device/poll` body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SubscriptionDevicePollRequest {
    /// The polling token `device/start` returned.
    pub device_code: String,
}

/// `GET .../models` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionModelsResponse {
    /// Always `openai`.
    pub vendor: String,
    /// Model names, sorted.
    pub models: Vec<String>,
}

/// The subscription routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_openai_subscription_models))
        .routes(routes!(get_openai_subscription_status))
        .routes(routes!(start_openai_subscription_device_login))
        .routes(routes!(poll_openai_subscription_device_login))
        .routes(routes!(logout_openai_subscription))
}

fn error(e: SubscriptionError) -> ApiError {
    match e {
        SubscriptionError::UnknownLogin => ApiError::not_found_msg(e.to_string()),
        SubscriptionError::Upstream(message) => {
            tracing::warn!(%message, "OpenAI subscription sign-in failed");
            ApiError::new(StatusCode::BAD_GATEWAY, message)
        }
        SubscriptionError::Io(_) => ApiError::internal(e),
    }
}

/// List models available through ChatGPT subscription authentication.
#[utoipa::path(get, path = "/llm/subscription/openai/models", tag = "LLM",
    operation_id = "list_openai_subscription_models_api_llm_subscription_openai_models_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SubscriptionModelsResponse)))]
pub async fn list_openai_subscription_models() -> Json<SubscriptionModelsResponse> {
    Json(SubscriptionModelsResponse {
        vendor: "openai".into(),
        models: OpenAiSubscription::models(),
    })
}

/// Return the safe ChatGPT subscription connection state (no tokens).
#[utoipa::path(get, path = "/llm/subscription/openai/status", tag = "LLM",
    operation_id = "get_openai_subscription_status_api_llm_subscription_openai_status_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Object)))]
pub async fn get_openai_subscription_status(
    State(state): State<SharedState>,
) -> Json<SubscriptionStatus> {
    Json(state.subscription.status().await)
}

/// Start ChatGPT device-code sign-in (returns an opaque polling token).
#[utoipa::path(post, path = "/llm/subscription/openai/device/start", tag = "LLM",
    operation_id = "start_openai_subscription_device_login_api_llm_subscription_openai_device_start_post",
    security(("APIKeyHeader" = [])),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 502, description = "The sign-in issuer refused or was unreachable")))]
pub async fn start_openai_subscription_device_login(
    State(state): State<SharedState>,
) -> Result<Json<DeviceStart>, ApiError> {
    state.subscription.start().await.map(Json).map_err(error)
}

/// Poll a ChatGPT device-code sign-in once (stores the tokens on success).
#[utoipa::path(post, path = "/llm/subscription/openai/device/poll", tag = "LLM",
    operation_id = "poll_openai_subscription_device_login_api_llm_subscription_openai_device_poll_post",
    security(("APIKeyHeader" = [])),
    request_body = SubscriptionDevicePollRequest,
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "Subscription device login not found or expired", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = HttpValidationError),
        (status = 502, description = "The sign-in issuer refused or was unreachable")))]
pub async fn poll_openai_subscription_device_login(
    State(state): State<SharedState>,
    ApiJson(body): ApiJson<SubscriptionDevicePollRequest>,
) -> Result<Json<SubscriptionStatus>, ApiError> {
    state
        .subscription
        .poll(&body.device_code)
        .await
        .map(Json)
        .map_err(error)
}

/// Remove stored ChatGPT subscription credentials.
#[utoipa::path(post, path = "/llm/subscription/openai/logout", tag = "LLM",
    operation_id = "logout_openai_subscription_api_llm_subscription_openai_logout_post",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Object)))]
pub async fn logout_openai_subscription(
    State(state): State<SharedState>,
) -> Result<Json<SubscriptionStatus>, ApiError> {
    state.subscription.logout().await.map(Json).map_err(error)
}
