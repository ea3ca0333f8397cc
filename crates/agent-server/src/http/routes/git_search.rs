//! `GET /api/git/repositories/search`: repositories the user's git
//! provider token can access ([`crate::service::git_providers`]).

use crate::http::error::{ApiError, HttpValidationError, ValidationIssue, literal_list};
use crate::http::extract::ApiQuery;
use crate::http::state::SharedState;
use crate::service::git_providers::{PROVIDERS, RepositoryPage, SearchError, SearchRequest};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

/// Query of the search.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    /// Provider (`github`, `gitlab`, `bitbucket`, `azure_devops`).
    pub provider: String,
    /// Repository name filter.
    #[serde(default)]
    pub query: Option<String>,
    /// Most repositories (1..=100, default 100).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Provider-specific page cursor.
    #[serde(default)]
    pub page_id: Option<String>,
}

fn check(query: &SearchQuery) -> Result<usize, ApiError> {
    let mut issues = Vec::new();
    if !PROVIDERS.contains(&query.provider.as_str()) {
        let expected = literal_list(&PROVIDERS);
        issues.push(
            ValidationIssue::new(
                "enum",
                vec!["query".into(), "provider".into()],
                format!("Input should be {expected}"),
                json!(query.provider),
            )
            .with_ctx(json!({"expected": expected})),
        );
    }
    let limit = query.limit.unwrap_or(100);
    let loc = || vec!["query".into(), "limit".into()];
    if limit < 1 {
        issues.push(ValidationIssue::greater_than_equal(
            loc(),
            Value::String(limit.to_string()),
            1,
        ));
    } else if limit > 100 {
        issues.push(ValidationIssue::less_than_equal(
            loc(),
            Value::String(limit.to_string()),
            100,
        ));
    }
    if issues.is_empty() {
        Ok(usize::try_from(limit).unwrap_or(100))
    } else {
        Err(ApiError::validation(issues))
    }
}

/// List repositories accessible to a configured git provider token.
#[utoipa::path(get, path = "/git/repositories/search", tag = "Git",
    operation_id = "git_repositories_search_api_git_repositories_search_get",
    security(("APIKeyHeader" = [])),
    params(("provider" = String, Query, description = "Git provider to search"),
           ("query" = Option<String>, Query, description = "Optional repository name filter"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Maximum repositories to return"),
           ("page_id" = Option<String>, Query, description = "Provider-specific page cursor")),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 400, description = "Unsupported provider or bad page_id", body = crate::http::error::ErrorDetail),
        (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn git_repositories_search(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<RepositoryPage>, ApiError> {
    let limit = check(&query)?;
    let request = SearchRequest {
        provider: query.provider,
        query: query.query,
        limit,
        page_id: query.page_id,
    };
    state
        .git_providers
        .search(&state.secrets, request)
        .await
        .map(Json)
        .map_err(|e| match e {
            SearchError::Unsupported(_) => ApiError::bad_request(e.to_string()),
            SearchError::Api { message, status } => ApiError::new(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                message,
            ),
        })
}
