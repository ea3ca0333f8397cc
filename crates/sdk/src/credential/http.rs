//! The reference's HTTP credential binding: `GET <url>` answers
//! `{"value": "...", "version": "..."}`; `PUT <url>` with
//! `{"expected_version", "value"}` answers `{"version": "..."}`. Both carry
//! the binding's headers (its authorization), which the product may renew
//! ([`HttpVersionedCredentialBinding::reauthorize`]). Every call ends after
//! the binding's timeout (5 s by default, as the reference).

use super::{CredentialError, ResolvedCredential, VersionedCredentialBinding};
use async_trait::async_trait;
use parking_lot::RwLock;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The reference's timeout of one binding call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A binding to a credential served over HTTP.
pub struct HttpVersionedCredentialBinding {
    url: String,
    timeout: Duration,
    headers: RwLock<BTreeMap<String, String>>,
    revision: AtomicU64,
    client: Result<reqwest::Client, openhands_client::ClientError>,
}

impl std::fmt::Debug for HttpVersionedCredentialBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers carry the authorization: never printed.
        f.debug_struct("HttpVersionedCredentialBinding")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HttpVersionedCredentialBinding {
    /// A binding to `url` sending `headers`, each call bounded by
    /// [`DEFAULT_TIMEOUT`].
    pub fn new(url: impl Into<String>, headers: BTreeMap<String, String>) -> Self {
        Self::with_timeout(url, headers, DEFAULT_TIMEOUT)
    }

    /// A binding whose calls end after `timeout`.
    pub fn with_timeout(
        url: impl Into<String>,
        headers: BTreeMap<String, String>,
        timeout: Duration,
    ) -> Self {
        let client =
            openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(timeout));
        Self {
            url: url.into(),
            timeout,
            headers: RwLock::new(headers),
            revision: AtomicU64::new(0),
            client,
        }
    }

    /// The credential's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Takes over the authorization (headers) of `replacement`, a binding to
    /// the same URL; a rejected authorization is tried again afterwards.
    pub fn reauthorize(
        &self,
        replacement: &HttpVersionedCredentialBinding,
    ) -> Result<(), UrlMismatch> {
        if replacement.url != self.url {
            return Err(UrlMismatch);
        }
        let headers = replacement.headers.read().clone();
        *self.headers.write() = headers;
        self.revision.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn request(&self, method: reqwest::Method) -> Result<reqwest::RequestBuilder, CredentialError> {
        let client = self.client.as_ref().map_err(|e| {
            CredentialError::Unavailable(format!("Credential source is unavailable: {e}"))
        })?;
        let parsed = reqwest::Url::parse(&self.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                CredentialError::InvalidResponse("Credential source URL is invalid.".into())
            })?;
        let mut headers = HeaderMap::new();
        for (name, value) in self.headers.read().iter() {
            let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                return Err(CredentialError::InvalidResponse(
                    "Credential binding headers are invalid.".into(),
                ));
            };
            headers.insert(n, v);
        }
        Ok(client
            .request(method, parsed)
            .headers(headers)
            .timeout(self.timeout))
    }

    /// The reference's mapping of an answer's status.
    fn check_status(status: u16) -> Result<(), CredentialError> {
        match status {
            501 => Err(CredentialError::Unsupported(
                "Credential binding is not supported by this source.".into(),
            )),
            404 => Err(CredentialError::NeedsReauthentication(
                "Credential is missing. Please authenticate again.".into(),
            )),
            409 => Err(CredentialError::Conflict(
                "The canonical credential changed in another runtime.".into(),
            )),
            400 | 422 => Err(CredentialError::NeedsReauthentication(
                "Credential is invalid. Please authenticate again.".into(),
            )),
            401 | 403 => Err(CredentialError::AuthorizationRejected(
                "Credential authorization was rejected.".into(),
            )),
            200..=299 => Ok(()),
            _ => Err(CredentialError::Unavailable(
                "Credential source request failed.".into(),
            )),
        }
    }

    async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        unavailable: &str,
    ) -> Result<Value, CredentialError> {
        let response = builder
            .send()
            .await
            .map_err(|_| CredentialError::Unavailable(unavailable.to_string()))?;
        Self::check_status(response.status().as_u16())?;
        response.json::<Value>().await.map_err(|_| invalid())
    }
}

/// A re-authorization from a binding to another URL than the bound one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("credential_binding_url_mismatch")]
pub struct UrlMismatch;

fn invalid() -> CredentialError {
    CredentialError::InvalidResponse("Credential source returned an invalid response.".into())
}

#[async_trait]
impl VersionedCredentialBinding for HttpVersionedCredentialBinding {
    async fn load(&self) -> Result<ResolvedCredential, CredentialError> {
        let builder = self.request(reqwest::Method::GET)?;
        let body = self
            .send(builder, "Credential source is unavailable.")
            .await?;
        let value = body
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let version = body
            .get("version")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(invalid)?;
        Ok(ResolvedCredential {
            value: value.to_string(),
            version: version.to_string(),
        })
    }

    async fn replace(
        &self,
        expected_version: &str,
        value: &str,
    ) -> Result<String, CredentialError> {
        let builder = self
            .request(reqwest::Method::PUT)?
            .json(&json!({"expected_version": expected_version, "value": value}));
        let body = self
            .send(builder, "Credential update is unavailable.")
            .await?;
        body.get("version")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(invalid)
    }

    fn authorization_revision(&self) -> Option<u64> {
        Some(self.revision.load(Ordering::SeqCst))
    }
}
