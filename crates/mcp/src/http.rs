//! Streamable HTTP servers: rmcp's client transport on our reqwest, with
//! the configured headers (auth already folded in by the config).

use crate::transport_error::{TransportError, parse_header};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Connect timeout of the HTTP client (each request is also bounded by
/// the caller's start/call timeouts).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The client and transport configuration for `url` sending `headers`.
fn parts(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(reqwest::Client, StreamableHttpClientTransportConfig), TransportError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut custom = HashMap::new();
    let mut bearer = None;
    let mut defaults = HeaderMap::new();
    for (k, v) in headers {
        let (name, value) = parse_header(k, v)?;
        if name == AUTHORIZATION {
            match v.strip_prefix("Bearer ") {
                Some(token) => bearer = Some(token.to_string()),
                None => {
                    defaults.insert(name, value);
                }
            }
        } else {
            custom.insert(name, value);
        }
    }
    let client = openhands_client::http_client(
        &openhands_client::HttpOptions::per_request(CONNECT_TIMEOUT).headers(defaults),
    )
    .map_err(TransportError::Client)?;
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    Ok((client, config))
}

/// The transport for `url` sending `headers`. A `Bearer` Authorization
/// header becomes rmcp's auth header; the others are sent as given.
pub(crate) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, TransportError> {
    let (client, config) = parts(url, headers)?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// The transport for an OAuth server: every request carries the current
/// access token of `manager` (refreshed before it expires).
pub(crate) fn oauth_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    manager: AuthorizationManager,
) -> Result<StreamableHttpClientTransport<AuthClient<reqwest::Client>>, TransportError> {
    let (client, config) = parts(url, headers)?;
    Ok(StreamableHttpClientTransport::with_client(
        AuthClient::new(client, manager),
        config,
    ))
}
