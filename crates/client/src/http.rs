//! The one HTTP client factory of the project: every HTTP client (of an
//! agent server, an LLM provider, an MCP server, a webhook or any other
//! peer) is built here, with the shared TLS configuration of
//! [`crate::tls`], its timeouts, the process's observability headers and
//! the peer's own headers, proxy and redirect rules ([`HttpOptions`]).

use crate::error::ClientError;
use crate::tls::{TlsOptions, client_config};
use reqwest::header::HeaderMap;
use std::time::Duration;

/// How an HTTP client is built. Start from [`HttpOptions::default`] (or
/// [`HttpOptions::with_timeout`]) and add what the peer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Timeout of a whole request (`None`: per request only).
    pub timeout: Option<Duration>,
    /// Timeout of connecting (TCP and TLS).
    pub connect_timeout: Option<Duration>,
    /// Timeout between two reads of an answer (`None`: none besides
    /// [`HttpOptions::timeout`]); for long streams with a bound on silence.
    pub read_timeout: Option<Duration>,
    /// Trusted certificates.
    pub tls: TlsOptions,
    /// Send the process's `X-OpenHands-Observability-*` headers.
    pub observability_headers: bool,
    /// Headers sent with every request (after the observability ones).
    pub headers: HeaderMap,
    /// Go through the proxy of `HTTP(S)_PROXY`/`ALL_PROXY` (`false` for
    /// peers on this machine, which a proxy cannot reach).
    pub proxy: bool,
    /// Follow redirects (up to 10); `false` hands 3xx answers to the caller.
    pub follow_redirects: bool,
    /// Most idle connections kept per host (`None`: no limit).
    pub max_idle_per_host: Option<usize>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Some(Duration::from_secs(30)),
            read_timeout: None,
            tls: TlsOptions::default(),
            observability_headers: false,
            headers: HeaderMap::new(),
            proxy: true,
            follow_redirects: true,
            max_idle_per_host: None,
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

    /// Connecting ends after `connect`; requests carry their own timeouts
    /// (streams that may last long).
    pub fn per_request(connect: Duration) -> Self {
        Self {
            timeout: None,
            connect_timeout: Some(connect),
            ..Self::default()
        }
    }

    /// A bound on the silence between two reads of an answer.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = Some(timeout);
        self
    }

    /// These headers with every request.
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// Straight to the peer, never through a configured proxy.
    pub fn no_proxy(mut self) -> Self {
        self.proxy = false;
        self
    }

    /// Redirects are answers, not followed.
    pub fn no_redirects(mut self) -> Self {
        self.follow_redirects = false;
        self
    }

    /// At most `n` idle connections per host.
    pub fn max_idle_per_host(mut self, n: usize) -> Self {
        self.max_idle_per_host = Some(n);
        self
    }
}

/// A reqwest client built by the rules of `options`: the one place of the
/// project that builds one (`clippy.toml` refuses `reqwest::Client::new`
/// and `builder` elsewhere).
#[allow(
    clippy::disallowed_methods,
    reason = "the HTTP client factory: every other client is built here"
)]
pub fn http_client(options: &HttpOptions) -> Result<reqwest::Client, ClientError> {
    // The process default too, for libraries (rmcp) that build TLS
    // connections of their own.
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
    if let Some(t) = options.read_timeout {
        builder = builder.read_timeout(t);
    }
    let mut headers = if options.observability_headers {
        crate::headers::observability_headers_from_env()
    } else {
        HeaderMap::new()
    };
    headers.extend(options.headers.clone());
    if !headers.is_empty() {
        builder = builder.default_headers(headers);
    }
    if !options.proxy {
        builder = builder.no_proxy();
    }
    if !options.follow_redirects {
        builder = builder.redirect(reqwest::redirect::Policy::none());
    }
    if let Some(n) = options.max_idle_per_host {
        builder = builder.pool_max_idle_per_host(n);
    }
    builder
        .build()
        .map_err(|e| ClientError::Tls(format!("HTTP client setup: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One connection: answers a redirect and hands back the request head.
    async fn redirecting_peer() -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/start", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            String::from_utf8_lossy(&head).to_lowercase()
        });
        (url, task)
    }

    #[tokio::test]
    async fn peer_headers_and_the_redirect_rule_apply() {
        let (url, peer) = redirecting_peer().await;
        let mut headers = HeaderMap::new();
        headers.insert("x-peer-header", HeaderValue::from_static("v1"));
        let client = http_client(
            &HttpOptions::with_timeout(Duration::from_secs(30))
                .headers(headers)
                .no_redirects()
                .no_proxy(),
        )
        .unwrap();
        let answer = client.get(&url).send().await.unwrap();
        assert_eq!(answer.status().as_u16(), 302);
        let head = peer.await.unwrap();
        assert!(head.contains("x-peer-header: v1"), "{head}");
    }
}
