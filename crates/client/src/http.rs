//! The one HTTP client factory: every client of an agent server (and any
//! other HTTP peer that wants the same TLS and header rules) is built here,
//! with the shared TLS configuration of [`crate::tls`], its timeouts and the
//! process's observability headers.

use crate::error::ClientError;
use crate::tls::{TlsOptions, client_config};
use std::time::Duration;

/// How an HTTP client is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Timeout of a whole request (`None`: per request only).
    pub timeout: Option<Duration>,
    /// Timeout of connecting (TCP and TLS).
    pub connect_timeout: Option<Duration>,
    /// Trusted certificates.
    pub tls: TlsOptions,
    /// Send the process's `X-OpenHands-Observability-*` headers.
    pub observability_headers: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Some(Duration::from_secs(30)),
            tls: TlsOptions::default(),
            observability_headers: false,
        }
    }
}

impl HttpOptions {
    /// Every request (and connect) ends after `timeout`.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            connect_timeout: Some(timeout),
            ..Self::default()
        }
    }
}

/// A reqwest client built by the rules of `options`.
pub fn http_client(options: &HttpOptions) -> Result<reqwest::Client, ClientError> {
    // The process default too, for the clients built elsewhere (LLM
    // providers, MCP) that rely on one being installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = client_config(&options.tls)?;
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured((*tls).clone())
        .tcp_nodelay(true);
    if let Some(t) = options.timeout {
        builder = builder.timeout(t);
    }
    if let Some(t) = options.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    if options.observability_headers {
        builder = builder.default_headers(crate::headers::observability_headers_from_env());
    }
    builder
        .build()
        .map_err(|e| ClientError::Tls(format!("HTTP client setup: {e}")))
}
