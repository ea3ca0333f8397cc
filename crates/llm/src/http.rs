//! The HTTP backend: sends one attempt to the resolved provider route,
//! non-streamed, as SSE or as an AWS event stream (Bedrock), signing
//! Bedrock requests with SigV4 when no API key is set, and turns failures
//! into typed errors.

use crate::bedrock::{auth::BedrockAuth, auth::BedrockTarget, converse, event_stream, sigv4};
use crate::classify;
use crate::error::LlmError;
use crate::routing::{self, ApiKind, Route};
use crate::subscription::{self, SubscriptionSource};
use crate::types::{LlmBackend, LlmRequest, LlmResponse, TokenCallback};
use crate::{anthropic, gemini, openai_chat, openai_responses, provider_env};
use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use openhands_wire::LlmConfig;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Largest reply body read into memory.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Time allowed to establish a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Idle connections kept per provider host for the next call. A burst of
/// concurrent conversations opens as many connections as calls in flight;
/// without a bound each stayed pooled afterwards (about 40 kB of buffers
/// and channels apiece in a heap profile, so 40 MB after a burst of 1,000
/// calls, and as many sockets held open at the provider).
const MAX_IDLE_PER_HOST: usize = 32;

static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

/// Installs the ring crypto provider for rustls (once; later calls and a
/// provider installed by someone else are fine).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The process-wide HTTP client (connection pool shared by every LLM).
pub fn shared_client() -> Result<reqwest::Client, LlmError> {
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    // Requests carry their own timeouts (the LLM's `timeout`, streams).
    let client = openhands_client::http_client(
        &openhands_client::HttpOptions::per_request(CONNECT_TIMEOUT)
            .max_idle_per_host(MAX_IDLE_PER_HOST),
    )
    .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// Converts a seconds value from the config into a duration (`None` for
/// absent, non-positive or non-finite values).
pub fn secs(v: Option<f64>) -> Option<Duration> {
    v.filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// Sends requests to a real provider over HTTP.
#[derive(Clone)]
pub struct HttpBackend {
    client: reqwest::Client,
    route: Route,
    /// What the provider's environment variables supply for fields the
    /// configuration leaves unset (read once, at construction).
    env: provider_env::EnvDefaults,
    /// Endpoint, model id, region and credentials of a Bedrock route.
    bedrock: Option<BedrockTarget>,
    /// Project, location and credentials of a Vertex AI route, with
    /// its access tokens.
    vertex: Option<Arc<(crate::vertex::VertexTarget, crate::vertex::TokenCache)>>,
    /// Where a subscription route (`auth_type: subscription`) takes its
    /// tokens, and the Codex backend's base URL.
    subscription: Option<(Arc<dyn SubscriptionSource>, String)>,
}

impl std::fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend")
            .field("route", &self.route)
            .field("subscription", &self.subscription.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpBackend {
    /// A backend for `config`'s provider route; the provider's key,
    /// endpoint and version variables fill what `config` leaves unset.
    pub fn new(config: &LlmConfig) -> Result<Self, LlmError> {
        Self::with_env(config, provider_env::defaults(config))
    }

    /// A backend with the environment's contribution given explicitly.
    pub fn with_env(config: &LlmConfig, env: provider_env::EnvDefaults) -> Result<Self, LlmError> {
        if subscription::openai::is_subscription(config) {
            subscription::openai::check_vendor(config)?;
            let source = subscription::source()?;
            let base = source.codex_base();
            let applied = subscription::openai::runtime_config(config, &base);
            return Ok(Self {
                client: shared_client()?,
                route: routing::resolve(&applied)?,
                env: provider_env::EnvDefaults::default(),
                bedrock: None,
                vertex: None,
                subscription: Some((source, base)),
            });
        }
        let applied = if env.is_empty() {
            Cow::Borrowed(config)
        } else {
            Cow::Owned(env.apply(config))
        };
        let route = routing::resolve(&applied)?;
        let bedrock = match route.kind {
            ApiKind::BedrockConverse => {
                Some(crate::bedrock::auth::resolve(&applied, &provider_env::var)?)
            }
            _ => None,
        };
        let vertex = match route.auth {
            routing::AuthStyle::GoogleOAuth => Some(Arc::new((
                crate::vertex::resolve(&applied, &provider_env::var)?,
                crate::vertex::TokenCache::default(),
            ))),
            _ => None,
        };
        Ok(Self {
            client: shared_client()?,
            route,
            env,
            bedrock,
            vertex,
            subscription: None,
        })
    }

    /// The resolved route.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// The body and headers of one request (exposed for tests and benches).
    pub fn prepare(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        stream: bool,
    ) -> Result<(serde_json::Value, Vec<(String, String)>), LlmError> {
        let r = &self.route;
        Ok(match r.kind {
            ApiKind::Chat => (
                openai_chat::build_body(config, r, request, stream),
                openai_chat::headers(config, r, request),
            ),
            ApiKind::Responses => (
                openai_responses::build_body(config, r, request, stream),
                openai_responses::headers(config, r, request),
            ),
            ApiKind::Anthropic => (
                anthropic::build_body(config, r, request, stream),
                anthropic::headers(config, r, request),
            ),
            ApiKind::BedrockConverse => (
                converse::build_body(config, &r.model, request)?,
                bedrock_headers(config, r),
            ),
            ApiKind::Gemini => {
                let mut h = crate::common::base_headers(config, r, request);
                crate::common::apply_extra_headers(config, &mut h);
                (gemini::build_body(config, &r.model, request), h)
            }
        })
    }

    fn parse(&self, config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
        match self.route.kind {
            ApiKind::Chat => openai_chat::parse_response(config, body),
            ApiKind::Responses => openai_responses::parse_response(config, body),
            ApiKind::Anthropic => anthropic::parse_response(config, body),
            ApiKind::BedrockConverse => converse::parse_response(config, body),
            ApiKind::Gemini => gemini::parse_response(config, body),
        }
    }

    /// The URL of one call (Bedrock streams at its own path).
    fn url(&self, stream: bool) -> Cow<'_, str> {
        if let Some(v) = &self.vertex {
            return Cow::Owned(v.0.url(stream));
        }
        match &self.bedrock {
            Some(t) if stream => Cow::Owned(t.url(true)),
            _ if stream && self.route.kind == ApiKind::Gemini => Cow::Owned(
                self.route
                    .url
                    .replace(":generateContent", ":streamGenerateContent?alt=sse"),
            ),
            _ => Cow::Borrowed(&self.route.url),
        }
    }

    async fn send(
        &self,
        url: &str,
        body: &serde_json::Value,
        mut headers: Vec<(String, String)>,
    ) -> Result<reqwest::Response, LlmError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| LlmError::Config(format!("cannot serialize request: {e}")))?;
        if let Some(BedrockTarget {
            auth: BedrockAuth::SigV4(creds),
            region,
            ..
        }) = &self.bedrock
        {
            let parsed = url::Url::parse(url)
                .map_err(|e| LlmError::Config(format!("invalid Bedrock URL `{url}`: {e}")))?;
            let signed = sigv4::sign(
                &sigv4::SignableRequest {
                    method: "POST",
                    url: &parsed,
                    content_type: Some("application/json"),
                    body: &bytes,
                },
                creds,
                region,
                "bedrock",
                chrono::Utc::now(),
            );
            headers.retain(|(k, _)| !signed.iter().any(|(s, _)| k.eq_ignore_ascii_case(s)));
            headers.extend(signed.into_iter().map(|(k, v)| (k.to_string(), v)));
        }
        let mut req = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        for (k, v) in headers {
            match (
                reqwest::header::HeaderName::from_bytes(k.as_bytes()),
                reqwest::header::HeaderValue::from_str(&v),
            ) {
                (Ok(name), Ok(value)) => req = req.header(name, value),
                _ => {
                    return Err(LlmError::Config(format!("invalid HTTP header `{k}`")));
                }
            }
        }
        let resp = req.send().await.map_err(|e| classify::from_reqwest(&e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = classify::retry_after(resp.headers());
        let aws_error = resp
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(':').next().unwrap_or(v).to_string());
        let body = read_body(resp).await.unwrap_or_default();
        if let (Some(name), true) = (aws_error, self.bedrock.is_some()) {
            return Err(match converse::exception_error(&name, &body) {
                LlmError::RateLimit { message, .. } => LlmError::RateLimit {
                    message,
                    retry_after,
                },
                other => other,
            });
        }
        Err(classify::from_status(
            status.as_u16(),
            &String::from_utf8_lossy(&body),
            retry_after,
        ))
    }

    /// Reads a ConverseStream reply (AWS event-stream framing).
    async fn stream_bedrock(
        &self,
        config: &LlmConfig,
        resp: reqwest::Response,
        on_token: Option<&TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let idle = secs(config.stream_idle_timeout);
        let mut bytes = resp.bytes_stream();
        let mut decoder = event_stream::Decoder::new();
        let mut asm = converse::ConverseStream::new();
        loop {
            let next = match idle {
                Some(d) => match tokio::time::timeout(d, bytes.next()).await {
                    Ok(n) => n,
                    Err(_) if asm.is_complete() => break,
                    Err(_) => {
                        return Err(LlmError::Timeout(format!(
                            "LLM stream idle timeout after {} seconds",
                            d.as_secs_f64()
                        )));
                    }
                },
                None => bytes.next().await,
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| classify::from_reqwest(&e))?;
            decoder.push(&chunk);
            while let Some(msg) = decoder
                .next_message()
                .map_err(|e| LlmError::MalformedResponse(e.to_string()))?
            {
                match msg.header(":message-type").unwrap_or("event") {
                    "event" => {
                        let event = msg.header(":event-type").unwrap_or_default();
                        asm.feed(event, &msg.payload, on_token)?;
                    }
                    "exception" => {
                        let name = msg.header(":exception-type").unwrap_or("exception");
                        return Err(converse::exception_error(name, &msg.payload));
                    }
                    _ => {
                        let name = msg.header(":error-code").unwrap_or("error");
                        let text = msg.header(":error-message").unwrap_or_default();
                        return Err(converse::exception_error(name, text.as_bytes()));
                    }
                }
            }
        }
        if decoder.pending() > 0 {
            return Err(LlmError::MalformedResponse(
                "converse stream ended inside an event".into(),
            ));
        }
        asm.finish(config)
    }

    async fn stream(
        &self,
        config: &LlmConfig,
        resp: reqwest::Response,
        on_token: Option<&TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let idle = secs(config.stream_idle_timeout);
        let mut events = resp.bytes_stream().eventsource();
        let mut asm = Assembler::new(self.route.kind);
        loop {
            let next = match idle {
                Some(d) => match tokio::time::timeout(d, events.next()).await {
                    Ok(n) => n,
                    // A reply that already finished but whose connection
                    // lingers is complete.
                    Err(_) if asm.is_complete() => break,
                    Err(_) => {
                        return Err(LlmError::Timeout(format!(
                            "LLM stream idle timeout after {} seconds",
                            d.as_secs_f64()
                        )));
                    }
                },
                None => events.next().await,
            };
            let Some(ev) = next else { break };
            let ev = ev.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(t) => classify::from_reqwest(&t),
                other => LlmError::MalformedResponse(format!("bad event stream: {other}")),
            })?;
            if asm.feed(&ev.event, &ev.data, on_token)? {
                break;
            }
        }
        asm.finish(config)
    }
}

/// Dispatches SSE events to the assembler of the route's protocol.
enum Assembler {
    Chat(openai_chat::ChatStream),
    Responses(openai_responses::ResponsesStream),
    Anthropic(anthropic::AnthropicStream),
    Gemini(gemini::GeminiStream),
}

impl Assembler {
    fn new(kind: ApiKind) -> Self {
        match kind {
            ApiKind::Chat => Assembler::Chat(openai_chat::ChatStream::new()),
            ApiKind::Responses => Assembler::Responses(openai_responses::ResponsesStream::new()),
            // Bedrock streams are read by `stream_bedrock`, not as SSE.
            ApiKind::Anthropic | ApiKind::BedrockConverse => {
                Assembler::Anthropic(anthropic::AnthropicStream::new())
            }
            ApiKind::Gemini => Assembler::Gemini(gemini::GeminiStream::new()),
        }
    }

    fn feed(
        &mut self,
        event: &str,
        data: &str,
        cb: Option<&TokenCallback>,
    ) -> Result<bool, LlmError> {
        match self {
            Assembler::Chat(s) => s.feed(data, cb),
            Assembler::Responses(s) => s.feed(event, data, cb),
            Assembler::Anthropic(s) => s.feed(event, data, cb),
            Assembler::Gemini(s) => s.feed(data, cb).map(|()| false),
        }
    }

    /// Whether the reply is already complete (Chat: a finish reason was
    /// seen; the other protocols end on their final event).
    fn is_complete(&self) -> bool {
        match self {
            Assembler::Chat(s) => s.is_complete(),
            Assembler::Gemini(s) => s.is_complete(),
            Assembler::Responses(_) | Assembler::Anthropic(_) => false,
        }
    }

    fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        match self {
            Assembler::Chat(s) => s.finish(config),
            Assembler::Responses(s) => s.finish(config),
            Assembler::Anthropic(s) => s.finish(config),
            Assembler::Gemini(s) => s.finish(config),
        }
    }
}

async fn read_body(resp: reqwest::Response) -> Result<Vec<u8>, LlmError> {
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| classify::from_reqwest(&e))?;
        if out.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(LlmError::MalformedResponse(format!(
                "reply larger than {MAX_BODY_BYTES} bytes"
            )));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn is_event_stream(resp: &reqwest::Response, kind: ApiKind) -> bool {
    let wanted = match kind {
        ApiKind::BedrockConverse => "application/vnd.amazon.eventstream",
        _ => "text/event-stream",
    };
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(wanted))
}

/// Headers of a Bedrock call: the bearer token when there is one (SigV4
/// headers are added when the body is final), then `extra_headers`.
fn bedrock_headers(config: &LlmConfig, route: &Route) -> Vec<(String, String)> {
    let mut h = Vec::with_capacity(2);
    if route.auth == routing::AuthStyle::Bearer
        && let Some(key) = crate::common::api_key(config)
    {
        h.push(("authorization".into(), format!("Bearer {key}")));
    }
    crate::common::apply_extra_headers(config, &mut h);
    h
}

#[async_trait]
impl LlmBackend for HttpBackend {
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        if let Some((source, base)) = &self.subscription {
            return self
                .complete_subscription(source.as_ref(), base, config, request, on_token)
                .await;
        }
        let config = match &self.env.api_key {
            Some(key)
                if config
                    .api_key
                    .as_ref()
                    .is_none_or(|k| k.expose().trim().is_empty()) =>
            {
                let mut c = config.clone();
                c.api_key = Some(key.clone());
                Cow::Owned(c)
            }
            _ => Cow::Borrowed(config),
        };
        let config = config.as_ref();
        let stream = config.stream && on_token.is_some();
        let (mut body, mut headers) = self.prepare(config, request, stream)?;
        if let Some(v) = &self.vertex {
            if self.route.kind == ApiKind::Anthropic
                && let Some(o) = body.as_object_mut()
            {
                // The model is in the URL; the version in the body.
                o.remove("model");
                o.insert(
                    "anthropic_version".into(),
                    crate::vertex::ANTHROPIC_VERSION.into(),
                );
                headers.retain(|(k, _)| k != "anthropic-version");
            }
            let token = v.1.token(&self.client, &v.0.credentials).await?;
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        self.exchange(config, stream, body, headers, on_token).await
    }
}

impl HttpBackend {
    /// Sends one prepared request and reads its reply.
    async fn exchange(
        &self,
        config: &LlmConfig,
        stream: bool,
        body: serde_json::Value,
        headers: Vec<(String, String)>,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let resp = self.send(&self.url(stream), &body, headers).await?;
        // A server may answer a streaming request with a plain JSON body.
        if stream && is_event_stream(&resp, self.route.kind) {
            if self.route.kind == ApiKind::BedrockConverse {
                return self.stream_bedrock(config, resp, on_token.as_ref()).await;
            }
            self.stream(config, resp, on_token.as_ref()).await
        } else {
            let bytes = read_body(resp).await?;
            self.parse(config, &bytes)
        }
    }

    /// One call on a subscription: always streamed (the Codex backend
    /// answers nothing else), the body adapted, the stored access token as
    /// bearer with the account id it names.
    async fn complete_subscription(
        &self,
        source: &dyn SubscriptionSource,
        base: &str,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let config = subscription::openai::runtime_config(config, base);
        let (mut body, mut headers) = self.prepare(&config, request, true)?;
        subscription::openai::adapt_body(&mut body);
        let creds = source.credentials().await?;
        headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("authorization") && !k.eq_ignore_ascii_case("api-key")
        });
        headers.push((
            "authorization".into(),
            format!("Bearer {}", creds.access_token),
        ));
        if let Some(id) = subscription::openai::account_id(&creds.access_token) {
            headers.push(("chatgpt-account-id".into(), id));
        }
        self.exchange(&config, true, body, headers, on_token).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_conversion_is_total() {
        assert_eq!(secs(Some(0.5)), Some(Duration::from_millis(500)));
        assert_eq!(secs(Some(0.0)), None);
        assert_eq!(secs(Some(-1.0)), None);
        assert_eq!(secs(Some(f64::NAN)), None);
        assert_eq!(secs(Some(f64::INFINITY)), None);
        assert_eq!(secs(Some(1e300)), None);
        assert_eq!(secs(None), None);
    }

    #[test]
    fn client_builds_and_is_shared() {
        assert!(shared_client().is_ok());
        assert!(shared_client().is_ok());
    }

    /// A peer that answers `ok` to every request, holding each
    /// connection's first answer until `burst` connections are open at
    /// once; the count of connections still open.
    async fn burst_peer(burst: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let open = Arc::new(AtomicUsize::new(0));
        let all_here = Arc::new(tokio::sync::Barrier::new(burst));
        let counted = open.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (open, all_here) = (counted.clone(), all_here.clone());
                open.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut first = true;
                    // A small GET arrives in one read.
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {
                        if std::mem::take(&mut first) {
                            all_here.wait().await;
                        }
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if socket.write_all(answer).await.is_err() {
                            break;
                        }
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        (url, open)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_burst_the_pool_keeps_a_bounded_number_of_connections() {
        use std::sync::atomic::Ordering;
        let burst = MAX_IDLE_PER_HOST + 8;
        let (url, open) = burst_peer(burst).await;
        let client = shared_client().unwrap();
        let calls = (0..burst).map(|_| {
            let (client, url) = (client.clone(), url.clone());
            async move { client.get(url).send().await?.text().await }
        });
        let answers = futures::future::join_all(calls).await;
        assert!(
            answers
                .iter()
                .all(|a| a.as_deref().is_ok_and(|t| t == "ok"))
        );
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while open.load(Ordering::SeqCst) > MAX_IDLE_PER_HOST && std::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(open.load(Ordering::SeqCst), MAX_IDLE_PER_HOST);
    }
}
