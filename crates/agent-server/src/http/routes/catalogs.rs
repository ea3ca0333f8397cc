//! `POST /api/plugins/fetch` (strict fetch into the pinned cache, errors
//! `{"code", "message"}` with the reference's statuses),
//! `GET /api/plugins/marketplace` and `GET /api/skills/marketplace` (the
//! public extensions repository's marketplace with installation status),
//! `GET /api/skills/catalog` (public + user skills a profile launch can
//! load) and `POST /api/skills/sync`. The work is done by
//! `service::catalogs`.

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::routes::extensions::info;
use crate::http::state::SharedState;
use crate::service::catalogs::CatalogService;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use openhands_protocol::catalogs::{
    FetchPluginRequest, FetchPluginResponse, PluginMarketplaceResponse, SkillCatalogEntry,
    SkillCatalogResponse, SkillMarketplaceResponse, SyncResponse,
};
use openhands_protocol::conversations::loc;
use openhands_protocol::py_repr::py_repr;
use openhands_protocol::validation::ValidationIssue;
use openhands_sdk::plugin::strict::StrictFetchError;
use serde_json::json;
use std::time::Duration;

/// Where the server reads skills from: its conversation service's sources,
/// or this process's environment before one is attached.
pub(crate) fn skill_sources(state: &SharedState) -> openhands_sdk::skills::context::SkillSources {
    state
        .conversations
        .as_ref()
        .map(|c| c.config().skill_sources.clone())
        .unwrap_or_else(openhands_sdk::skills::context::SkillSources::from_env)
}

fn service(state: &SharedState) -> CatalogService {
    CatalogService::new(skill_sources(state))
}

fn fetch_error(e: StrictFetchError) -> ApiError {
    match e.status() {
        422 => ApiError::unprocessable(String::new())
            .with_field("detail", json!({"code": e.code, "message": e.message})),
        code => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
            // a 5xx HTTPException answers the reference's generic body with
            // `str(exc)`: the status and the dict's repr
            let detail = format!(
                "{{'code': {}, 'message': {}}}",
                py_repr(e.code),
                py_repr(&e.message)
            );
            ApiError::new(status, detail)
        }
    }
}

/// Fetch and pin a plugin source without installing or enabling it.
#[utoipa::path(post, path = "/plugins/fetch", tag = "Plugins",
    operation_id = "fetch_plugin_endpoint_api_plugins_fetch_post",
    security(("APIKeyHeader" = [])),
    request_body = FetchPluginRequest,
    responses((status = 200, description = "Successful Response", body = FetchPluginResponse),
              (status = 422, description = "Invalid plugin source, ref, path, or plugin"),
              (status = 502, description = "Plugin source unavailable"),
              (status = 504, description = "Plugin fetch timed out")))]
pub async fn fetch_plugin(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<FetchPluginRequest>,
) -> Result<Json<FetchPluginResponse>, ApiError> {
    let mut issues = Vec::new();
    if request.source.is_empty() {
        issues.push(
            ValidationIssue::new(
                "string_too_short",
                loc(&["body", "source"]),
                "String should have at least 1 character",
                json!(""),
            )
            .with_ctx(json!({"min_length": 1})),
        );
    }
    if request.timeout < 1 {
        issues.push(ValidationIssue::greater_than_equal(
            loc(&["body", "timeout"]),
            json!(request.timeout),
            1,
        ));
    } else if request.timeout > 600 {
        issues.push(ValidationIssue::less_than_equal(
            loc(&["body", "timeout"]),
            json!(request.timeout),
            600,
        ));
    }
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let timeout = Duration::from_secs(request.timeout.unsigned_abs());
    let checked = service(&state)
        .fetch_plugin(
            request.source,
            request.git_ref,
            request.repo_path,
            &request.secrets,
            timeout,
        )
        .await
        .map_err(fetch_error)?;
    Ok(Json(FetchPluginResponse {
        path: checked.path.to_string_lossy().into_owned(),
        resolved_ref: checked.resolved_ref,
        source: checked.source,
        repo_path: checked.repo_path,
        manifest: checked.manifest,
        skills: checked.skills,
        commands: checked.commands,
    }))
}

/// Get the plugins marketplace catalog with installation status.
#[utoipa::path(get, path = "/plugins/marketplace", tag = "Plugins",
    operation_id = "get_marketplace_catalog_api_plugins_marketplace_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = PluginMarketplaceResponse)))]
pub async fn plugin_marketplace(
    State(state): State<SharedState>,
) -> Json<PluginMarketplaceResponse> {
    Json(PluginMarketplaceResponse {
        plugins: service(&state).plugin_marketplace().await,
    })
}

/// Get the marketplace catalog with installation status.
#[utoipa::path(get, path = "/skills/marketplace", tag = "Skills",
    operation_id = "get_marketplace_catalog_api_skills_marketplace_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SkillMarketplaceResponse)))]
pub async fn skill_marketplace(State(state): State<SharedState>) -> Json<SkillMarketplaceResponse> {
    Json(SkillMarketplaceResponse {
        skills: service(&state).skill_marketplace().await,
    })
}

/// List the skills an Agent Profile launch can load.
#[utoipa::path(get, path = "/skills/catalog", tag = "Skills",
    operation_id = "get_skill_catalog_api_skills_catalog_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SkillCatalogResponse)))]
pub async fn skill_catalog(State(state): State<SharedState>) -> Json<SkillCatalogResponse> {
    let skills = service(&state)
        .skill_catalog()
        .await
        .into_iter()
        .map(|(s, origin)| SkillCatalogEntry {
            skill: info(&s),
            origin: origin.as_str().into(),
        })
        .collect();
    Json(SkillCatalogResponse { skills })
}

/// Force refresh of the public skills repository.
#[utoipa::path(post, path = "/skills/sync", tag = "Skills",
    operation_id = "sync_skills_api_skills_sync_post",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = SyncResponse)))]
pub async fn sync_skills(State(state): State<SharedState>) -> Json<SyncResponse> {
    Json(service(&state).sync().await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs_and_statuses_are_the_references() {
        assert_eq!(py_repr("a'b"), "\"a'b\"");
        assert_eq!(py_repr("x\ny"), "'x\\ny'");
        let e = fetch_error(StrictFetchError {
            code: "timeout",
            message: "Git operation timed out.".into(),
        });
        assert_eq!(e.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(
            e.body()["exception"],
            "504: {'code': 'timeout', 'message': 'Git operation timed out.'}"
        );
        let e = fetch_error(StrictFetchError {
            code: "ref_not_found",
            message: "nope".into(),
        });
        assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            e.body()["detail"],
            json!({"code": "ref_not_found", "message": "nope"})
        );
    }
}
