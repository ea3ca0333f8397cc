//! CORS: `allow_cors_origins`, `allow_cors_origin_regex`, and always
//! `localhost` / `127.0.0.1` (and `$DOCKER_HOST_ADDR`) on any port, with
//! credentials; methods and headers are mirrored like Starlette's `["*"]`.

use crate::config::Config;
use axum::http::HeaderValue;
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

/// Decides whether an `Origin` may call the API.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    origins: Vec<String>,
    regex: Option<regex::Regex>,
    docker_host: Option<String>,
}

impl OriginPolicy {
    /// The policy of `config` (an invalid regex was rejected at load time).
    pub fn from_config(config: &Config) -> Self {
        let regex = config
            .allow_cors_origin_regex
            .as_deref()
            .and_then(|r| regex::Regex::new(&format!("^(?:{r})$")).ok());
        Self {
            origins: config
                .allow_cors_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_string())
                .collect(),
            regex,
            docker_host: config.docker_host_addr.clone(),
        }
    }

    /// Whether `origin` is allowed.
    pub fn allows(&self, origin: &str) -> bool {
        if let Ok(url) = url::Url::parse(origin)
            && let Some(host) = url.host_str()
        {
            if host == "localhost" || host == "127.0.0.1" {
                return true;
            }
            if self.docker_host.as_deref() == Some(host) {
                return true;
            }
        }
        if self.origins.iter().any(|o| o == "*" || o == origin) {
            return true;
        }
        self.regex.as_ref().is_some_and(|r| r.is_match(origin))
    }
}

/// The CORS layer for the whole router.
pub fn layer(config: &Config) -> CorsLayer {
    let policy = OriginPolicy::from_config(config);
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
            origin.to_str().is_ok_and(|o| policy.allows(o))
        }))
        .allow_credentials(true)
        .allow_methods(AllowMethods::mirror_request())
        .allow_headers(AllowHeaders::mirror_request())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_listed_and_regex_origins() {
        let config = Config {
            allow_cors_origins: vec!["https://app.example.com".into()],
            allow_cors_origin_regex: Some(r"https://.*\.preview\.dev".into()),
            ..Config::default()
        };
        let p = OriginPolicy::from_config(&config);
        assert!(p.allows("http://localhost:3000"));
        assert!(p.allows("http://127.0.0.1"));
        assert!(p.allows("https://app.example.com"));
        assert!(p.allows("https://x.preview.dev"));
        assert!(!p.allows("https://x.preview.dev.evil.com"));
        assert!(!p.allows("https://evil.com"));
        assert!(!p.allows("null"));
    }
}
