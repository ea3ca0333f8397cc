//! A small typed client of the Kubernetes REST API: create, get, list,
//! merge-patch and delete of namespaced resources given by group, version
//! and plural, as JSON. Requests go through the project's HTTP client
//! factory (rustls); every call has a timeout; an API error keeps the
//! server's `Status` (code, reason, message) and says what was attempted.

use super::config::{KubeConnection, Token};
use super::error::KubeError;
use openhands_client::http::{HttpOptions, http_client};
use serde_json::Value;
use std::time::Duration;

/// A namespaced resource type of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceType {
    /// API group (`""`: the core group).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// The plural in paths.
    pub plural: &'static str,
    /// The object kind.
    pub kind: &'static str,
}

impl ResourceType {
    /// `group/version` (or `version` in the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The collection's path in `namespace`.
    pub fn path(&self, namespace: &str) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        format!("{prefix}/namespaces/{namespace}/{}", self.plural)
    }

    /// `plural.group` as the API server names it in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// A client of one API server.
#[derive(Clone)]
pub struct KubeClient {
    server: String,
    http: reqwest::Client,
    token: Option<Token>,
    timeout: Duration,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl KubeClient {
    /// A client of `conn`, every request bounded by `timeout`.
    pub fn new(conn: &KubeConnection, timeout: Duration) -> Result<Self, KubeError> {
        let http = http_client(&HttpOptions {
            timeout: Some(timeout),
            connect_timeout: Some(timeout),
            tls: conn.tls.clone(),
            ..HttpOptions::default()
        })
        .map_err(|e| KubeError::Config(e.to_string()))?;
        Ok(Self {
            server: conn.server.trim_end_matches('/').to_string(),
            http,
            token: conn.token.clone(),
            timeout,
        })
    }

    /// The API server's base URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
        action: impl Fn() -> String,
    ) -> Result<Option<Value>, KubeError> {
        let url = format!("{}{path}", self.server);
        let mut req = self
            .http
            .request(method, &url)
            .timeout(self.timeout)
            .header("Accept", "application/json");
        match &self.token {
            Some(Token::Static(t)) => req = req.bearer_auth(t),
            Some(Token::File(p)) => {
                let t = tokio::fs::read_to_string(p).await.map_err(|e| {
                    KubeError::Config(format!("service account token {}: {e}", p.display()))
                })?;
                req = req.bearer_auth(t.trim());
            }
            None => {}
        }
        if let Some(b) = body {
            req = req
                .header("Content-Type", content_type.unwrap_or("application/json"))
                .body(b.to_string());
        }
        let answer = req.send().await.map_err(|e| {
            if e.is_timeout() {
                KubeError::Timeout(format!("{}: no answer within {:?}", action(), self.timeout))
            } else {
                KubeError::Transport(format!("{}: {} unreachable: {e}", action(), self.server))
            }
        })?;
        let status = answer.status().as_u16();
        let text = answer
            .text()
            .await
            .map_err(|e| KubeError::Transport(format!("{}: reading the answer: {e}", action())))?;
        if status == 404 {
            return Ok(None);
        }
        if !(200..300).contains(&status) {
            let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let field = |k: &str| parsed.get(k).and_then(Value::as_str).map(str::to_string);
            return Err(KubeError::Api {
                action: action(),
                code: status,
                reason: field("reason").unwrap_or_default(),
                message: field("message").unwrap_or_else(|| text.chars().take(300).collect()),
            });
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| KubeError::Invalid(format!("{}: the answer is not JSON: {e}", action())))
    }

    /// Creates `body` in `namespace` (a 404 means the resource type is
    /// unknown to the server: an error naming it).
    pub async fn create(
        &self,
        rt: &ResourceType,
        namespace: &str,
        body: &Value,
    ) -> Result<Value, KubeError> {
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let action = || format!("creating {} {namespace}/{name}", rt.qualified());
        self.send(
            reqwest::Method::POST,
            &rt.path(namespace),
            None,
            Some(body),
            action,
        )
        .await?
        .ok_or_else(|| KubeError::Api {
            action: action(),
            code: 404,
            reason: "NotFound".into(),
            message: format!(
                "the API server does not serve {} {} (is its CRD installed?) or the namespace {namespace:?} does not exist",
                rt.qualified(),
                rt.version
            ),
        })
    }

    /// The object, or `None` when it does not exist.
    pub async fn get(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, KubeError> {
        self.send(
            reqwest::Method::GET,
            &format!("{}/{name}", rt.path(namespace)),
            None,
            None,
            || format!("reading {} {namespace}/{name}", rt.qualified()),
        )
        .await
    }

    /// The objects in `namespace` matching `label_selector`.
    pub async fn list(
        &self,
        rt: &ResourceType,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Vec<Value>, KubeError> {
        let query = serde_urlencoded::to_string([("labelSelector", label_selector)])
            .map_err(|e| KubeError::Invalid(e.to_string()))?;
        let action = || format!("listing {} in {namespace}", rt.qualified());
        let list = self
            .send(
                reqwest::Method::GET,
                &format!("{}?{query}", rt.path(namespace)),
                None,
                None,
                action,
            )
            .await?
            .ok_or_else(|| KubeError::Api {
                action: action(),
                code: 404,
                reason: "NotFound".into(),
                message: format!("the API server does not serve {}", rt.qualified()),
            })?;
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// Applies a JSON merge patch; `None` when the object does not exist.
    pub async fn merge_patch(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Option<Value>, KubeError> {
        self.send(
            reqwest::Method::PATCH,
            &format!("{}/{name}", rt.path(namespace)),
            Some("application/merge-patch+json"),
            Some(patch),
            || format!("updating {} {namespace}/{name}", rt.qualified()),
        )
        .await
    }

    /// Deletes the object (its dependents in the background); `false` when
    /// it did not exist.
    pub async fn delete(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<bool, KubeError> {
        let body = serde_json::json!({
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
        });
        self.send(
            reqwest::Method::DELETE,
            &format!("{}/{name}", rt.path(namespace)),
            None,
            Some(&body),
            || format!("deleting {} {namespace}/{name}", rt.qualified()),
        )
        .await
        .map(|found| found.is_some())
    }
}
