//! The legacy HTTP+SSE transport (MCP 2024-11-05), which `rmcp` no longer
//! ships a client for: a `GET` opens an event stream whose first `endpoint`
//! event names the URL that takes the client's messages (`POST`, one
//! JSON-RPC message each); the server's messages arrive as `message`
//! events. Exposed to `rmcp` as a sink/stream pair; both pumps stop when
//! the connection is dropped ([`SseTasks`]).

use crate::oauth::connect::TokenSource;
use crate::transport_error::{TransportError, parse_header};
use eventsource_stream::Eventsource;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::task::AbortHandle;

/// Connect timeout of the HTTP client.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Limit of one `POST` of a message.
const POST_TIMEOUT: Duration = Duration::from_secs(30);
/// Messages buffered in either direction.
const BUFFER: usize = 64;

/// The reader and writer tasks of one connection, aborted when dropped.
#[derive(Debug, Default)]
pub(crate) struct SseTasks(Vec<AbortHandle>);

impl Drop for SseTasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The transport halves `rmcp` serves on.
pub(crate) type SsePair = (
    mpsc::Sender<TxJsonRpcMessage<RoleClient>>,
    mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
);

/// Opens the event stream of `url`, waits for its `endpoint` event and
/// starts the pumps.
/// With `token`, the event stream and every message carry its current
/// access token.
pub(crate) async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    token: Option<TokenSource>,
) -> Result<(SsePair, SseTasks), TransportError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut defaults = HeaderMap::new();
    for (k, v) in headers {
        let (name, value) = parse_header(k, v)?;
        defaults.insert(name, value);
    }
    let client = openhands_client::http_client(
        &openhands_client::HttpOptions::per_request(CONNECT_TIMEOUT).headers(defaults),
    )
    .map_err(TransportError::Client)?;
    let base = reqwest::Url::parse(url).map_err(|source| TransportError::Url {
        url: url.to_string(),
        source,
    })?;
    let mut get = client.get(base.clone()).header(ACCEPT, "text/event-stream");
    if let Some(t) = &token {
        get = get.bearer_auth(t.token(url).await?);
    }
    let resp = get.send().await.map_err(|source| TransportError::Get {
        url: url.to_string(),
        source,
    })?;
    if !resp.status().is_success() {
        return Err(TransportError::Status {
            url: url.to_string(),
            status: resp.status(),
        });
    }
    let mut events = resp.bytes_stream().eventsource();
    let endpoint = loop {
        match events.next().await {
            Some(Ok(ev)) if ev.event == "endpoint" => {
                break base
                    .join(ev.data.trim())
                    .map_err(|source| TransportError::Endpoint {
                        endpoint: ev.data.clone(),
                        source,
                    })?;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                return Err(TransportError::Stream {
                    url: url.to_string(),
                    detail: e.to_string(),
                });
            }
            None => return Err(TransportError::NoEndpoint(url.to_string())),
        }
    };
    let (mut to_rmcp, from_server) = mpsc::channel::<RxJsonRpcMessage<RoleClient>>(BUFFER);
    let (to_server, mut from_rmcp) = mpsc::channel::<TxJsonRpcMessage<RoleClient>>(BUFFER);
    let reader = tokio::spawn(async move {
        while let Some(item) = events.next().await {
            let ev = match item {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::warn!(error = %e, "MCP SSE stream failed");
                    break;
                }
            };
            if !(ev.event.is_empty() || ev.event == "message") {
                continue;
            }
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&ev.data) {
                Ok(msg) => {
                    if to_rmcp.send(msg).await.is_err() {
                        break;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "unreadable MCP SSE message ignored"),
            }
        }
    });
    let server_url = url.to_string();
    let writer = tokio::spawn(async move {
        while let Some(msg) = from_rmcp.next().await {
            let mut post = client.post(endpoint.clone());
            if let Some(t) = &token {
                match t.token(&server_url).await {
                    Ok(tok) => post = post.bearer_auth(tok),
                    Err(e) => {
                        tracing::warn!(error = %e, "MCP SSE message not sent");
                        break;
                    }
                }
            }
            let sent = post
                .header(CONTENT_TYPE, "application/json")
                .timeout(POST_TIMEOUT)
                .json(&msg)
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    tracing::warn!(status = %r.status(), "MCP SSE endpoint refused a message");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "MCP SSE message not delivered");
                    break;
                }
            }
        }
    });
    Ok((
        (to_server, from_server),
        SseTasks(vec![reader.abort_handle(), writer.abort_handle()]),
    ))
}
