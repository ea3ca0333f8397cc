//! Repository discovery at git providers (`GET /api/git/repositories/search`),
//! as the reference: only GitHub is searchable; its token is the first of
//! the user's secrets `github_token`, `GITHUB_TOKEN`, `GH_TOKEN`, `github`
//! (none: an empty page with `missing_token`); repositories come from
//! `GET /user/repos` (100 a page, most recently pushed first), filtered by
//! a case-insensitive substring of `full_name`, and continued with the
//! reference's `"<page>:<offset>"` cursors. The API base URL is
//! configurable (tests point it at a local server).

use crate::service::secrets_store::SecretsStore;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// GitHub's public API.
pub const GITHUB_API_URL: &str = "https://api.github.com";
const PAGE_SIZE: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(15);
const TOKEN_NAMES: [&str; 4] = ["github_token", "GITHUB_TOKEN", "GH_TOKEN", "github"];

/// The providers the request may name.
pub const PROVIDERS: [&str; 4] = ["github", "gitlab", "bitbucket", "azure_devops"];

/// One repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderRepository {
    /// Provider id.
    pub id: String,
    /// `owner/name`.
    pub full_name: String,
    /// Provider name.
    pub git_provider: String,
    /// Not private.
    pub is_public: bool,
    /// Stars.
    pub stargazers_count: Option<i64>,
    /// Last push time.
    pub pushed_at: Option<String>,
    /// Default branch.
    pub main_branch: Option<String>,
}

/// One page of repositories.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepositoryPage {
    /// The repositories.
    pub items: Vec<ProviderRepository>,
    /// Cursor of the next page.
    pub next_page_id: Option<String>,
    /// No token is configured.
    pub missing_token: bool,
}

/// Why a search failed (`status` is the HTTP status to answer with).
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The provider cannot be searched.
    #[error("Repository discovery is not supported for provider '{0}'")]
    Unsupported(String),
    /// The provider API failed (or the cursor is bad).
    #[error("{message}")]
    Api {
        /// What failed.
        message: String,
        /// Status to answer.
        status: u16,
    },
}

fn api_error(message: &str, status: u16) -> SearchError {
    SearchError::Api {
        message: message.to_string(),
        status,
    }
}

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Provider name.
    pub provider: String,
    /// Substring of `full_name`.
    pub query: Option<String>,
    /// Most repositories (1–100).
    pub limit: usize,
    /// Cursor.
    pub page_id: Option<String>,
}

/// The searcher: where GitHub's API is and an HTTP client.
#[derive(Debug, Clone)]
pub struct GitProviderSearch {
    github_api: String,
    /// The client, or why it could not be built (answered on use).
    http: Result<reqwest::Client, openhands_client::ClientError>,
}

impl Default for GitProviderSearch {
    fn default() -> Self {
        Self::new(GITHUB_API_URL)
    }
}

impl GitProviderSearch {
    /// A searcher talking to `github_api`.
    pub fn new(github_api: impl Into<String>) -> Self {
        Self {
            github_api: github_api.into().trim_end_matches('/').to_string(),
            http: openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
                TIMEOUT,
            )),
        }
    }

    /// Lists repositories the configured token can access.
    pub async fn search(
        &self,
        secrets: &SecretsStore,
        request: SearchRequest,
    ) -> Result<RepositoryPage, SearchError> {
        if request.provider != "github" {
            return Err(SearchError::Unsupported(request.provider));
        }
        let store = secrets.clone();
        let token = tokio::task::spawn_blocking(move || {
            TOKEN_NAMES
                .iter()
                .find_map(|n| store.get(n).ok().flatten().filter(|v| !v.is_empty()))
        })
        .await
        .ok()
        .flatten();
        let Some(token) = token else {
            return Ok(RepositoryPage {
                items: Vec::new(),
                next_page_id: None,
                missing_token: true,
            });
        };
        self.search_github(&token, request).await
    }

    async fn search_github(
        &self,
        token: &str,
        request: SearchRequest,
    ) -> Result<RepositoryPage, SearchError> {
        let (mut page, mut offset) = parse_page_id(request.page_id.as_deref())?;
        let query = request
            .query
            .filter(|q| !q.is_empty())
            .map(|q| q.to_lowercase());
        let limit = request.limit;
        let mut items: Vec<ProviderRepository> = Vec::new();
        let mut next_page_id = None;
        while items.len() < limit {
            let (repos, link) = self.fetch_page(token, page).await?;
            let mut page_items: Vec<ProviderRepository> = repos
                .into_iter()
                .filter(|r| {
                    query
                        .as_deref()
                        .is_none_or(|q| r.full_name.to_lowercase().contains(q))
                })
                .collect();
            if offset > 0 {
                page_items = page_items.into_iter().skip(offset).collect();
            }
            let remaining = limit - items.len();
            let more_here = page_items.len() > remaining;
            items.extend(page_items.into_iter().take(remaining));
            next_page_id = link.as_deref().and_then(next_page);
            if more_here {
                return Ok(RepositoryPage {
                    items,
                    next_page_id: Some(format!("{page}:{}", offset + remaining)),
                    missing_token: false,
                });
            }
            if query.is_none() {
                break;
            }
            let Some(next) = &next_page_id else { break };
            (page, offset) = parse_page_id(Some(next))?;
        }
        Ok(RepositoryPage {
            items,
            next_page_id,
            missing_token: false,
        })
    }

    async fn fetch_page(
        &self,
        token: &str,
        page: u64,
    ) -> Result<(Vec<ProviderRepository>, Option<String>), SearchError> {
        let url = format!("{}/user/repos", self.github_api);
        let http = self
            .http
            .as_ref()
            .map_err(|e| api_error(&e.to_string(), 502))?;
        let response = http
            .get(url)
            .query(&[
                ("per_page", PAGE_SIZE.to_string()),
                ("page", page.to_string()),
                ("sort", "pushed".to_string()),
                (
                    "affiliation",
                    "owner,collaborator,organization_member".to_string(),
                ),
            ])
            .header("Accept", "application/vnd.github+json")
            .header("Authorization", format!("Bearer {token}"))
            .header("X-GitHub-Api-Version", "2022-11-28")
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    tracing::warn!("GitHub repository search timed out");
                    api_error("GitHub repository search timed out", 504)
                } else {
                    tracing::warn!(error = %e, "GitHub repository search failed");
                    api_error("GitHub repository search failed", 502)
                }
            })?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            tracing::warn!(status, "GitHub repository search failed");
            let mapped = match status {
                401 | 403 => status,
                s if s >= 500 => 502,
                _ => 400,
            };
            return Err(api_error("GitHub repository search failed", mapped));
        }
        let link = response
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body: Value = response
            .json()
            .await
            .map_err(|_| api_error("GitHub repository search failed", 502))?;
        let Value::Array(list) = body else {
            return Err(api_error("GitHub repository search failed", 502));
        };
        Ok((list.iter().map(to_repository).collect(), link))
    }
}

fn to_repository(item: &Value) -> ProviderRepository {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    ProviderRepository {
        id: text(item.get("id")),
        full_name: text(item.get("full_name")),
        git_provider: "github".into(),
        is_public: !item.get("private").is_some_and(truthy),
        stargazers_count: item.get("stargazers_count").and_then(Value::as_i64),
        pushed_at: item
            .get("pushed_at")
            .and_then(Value::as_str)
            .map(str::to_string),
        main_branch: item
            .get("default_branch")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `"<page>[:<offset>]"` → (page ≥ 1, offset ≥ 0); absent: (1, 0).
fn parse_page_id(page_id: Option<&str>) -> Result<(u64, usize), SearchError> {
    let Some(raw) = page_id else {
        return Ok((1, 0));
    };
    let bad = || api_error("Invalid repository page_id", 400);
    let (raw_page, raw_offset) = raw.split_once(':').unwrap_or((raw, ""));
    let page: i64 = raw_page.trim().parse().map_err(|_| bad())?;
    let offset: i64 = if raw_offset.is_empty() {
        0
    } else {
        raw_offset.trim().parse().map_err(|_| bad())?
    };
    if page < 1 || offset < 0 {
        return Err(bad());
    }
    Ok((page as u64, offset as usize))
}

/// The `page` of the `rel="next"` link.
fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, rest) = part.trim().split_once(';')?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        let rel = rest.trim().strip_prefix("rel=\"")?.strip_suffix('"')?;
        if rel != "next" {
            return None;
        }
        let query = url.split_once('?')?.1;
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "page")
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cursors_and_links() {
        assert_eq!(parse_page_id(None).unwrap(), (1, 0));
        assert_eq!(parse_page_id(Some("3:7")).unwrap(), (3, 7));
        assert_eq!(parse_page_id(Some("2")).unwrap(), (2, 0));
        assert!(parse_page_id(Some("0")).is_err());
        assert!(parse_page_id(Some("x:1")).is_err());
        assert!(parse_page_id(Some("1:-1")).is_err());
        let link = r#"<https://api.github.com/user/repos?page=2&per_page=100>; rel="next", <https://api.github.com/user/repos?page=9>; rel="last""#;
        assert_eq!(next_page(link).as_deref(), Some("2"));
        assert_eq!(next_page(r#"<https://x/?page=1>; rel="prev""#), None);
    }
}
