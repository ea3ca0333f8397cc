//! `/api/llm/providers`, `/api/llm/models` and `/api/llm/models/verified`
//! (behind the session key), answered as the reference answers them from
//! LiteLLM's model table ([`openhands_llm::catalog`]), the same table cost
//! accounting and context windows use.

use crate::http::extract::ApiQuery;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `GET /api/llm/providers` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProvidersResponse {
    /// Provider names, sorted.
    pub providers: Vec<String>,
}

/// `GET /api/llm/models` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelsResponse {
    /// Model names, sorted.
    pub models: Vec<String>,
}

/// `GET /api/llm/models/verified` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifiedModelsResponse {
    /// Verified model names by provider.
    pub models: BTreeMap<String, Vec<String>>,
}

/// `?provider=` of the model list.
#[derive(Debug, Deserialize)]
pub struct ModelsQuery {
    /// Only this provider's models.
    #[serde(default)]
    pub provider: Option<String>,
}

/// The LLM catalogue routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(list_providers))
        .routes(routes!(list_models))
        .routes(routes!(list_verified_models))
}

/// List LiteLLM's provider names.
#[utoipa::path(get, path = "/llm/providers", tag = "LLM",
    operation_id = "list_providers_api_llm_providers_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = ProvidersResponse)))]
pub async fn list_providers() -> Json<ProvidersResponse> {
    Json(ProvidersResponse {
        providers: openhands_llm::catalog::providers()
            .into_iter()
            .map(str::to_string)
            .collect(),
    })
}

/// List the models of the model table (optionally one provider's), as
/// full names; Bedrock models are left out as the reference leaves them out
/// without AWS credentials.
#[utoipa::path(get, path = "/llm/models", tag = "LLM",
    operation_id = "list_models_api_llm_models_get",
    security(("APIKeyHeader" = [])),
    params(("provider" = Option<String>, Query, description = "Filter models by provider (e.g., 'openai', 'anthropic')")),
    responses(
        (status = 200, description = "Successful Response", body = ModelsResponse),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn list_models(ApiQuery(query): ApiQuery<ModelsQuery>) -> Json<ModelsResponse> {
    Json(ModelsResponse {
        models: openhands_llm::catalog::model_names(query.provider.as_deref()),
    })
}

/// List the verified models by provider.
#[utoipa::path(get, path = "/llm/models/verified", tag = "LLM",
    operation_id = "list_verified_models_api_llm_models_verified_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = VerifiedModelsResponse)))]
pub async fn list_verified_models() -> Json<serde_json::Value> {
    // Providers in the reference's order.
    let mut models = serde_json::Map::new();
    for (provider, names) in openhands_llm::catalog::verified() {
        models.insert(provider.to_string(), serde_json::json!(names));
    }
    Json(serde_json::json!({ "models": models }))
}
