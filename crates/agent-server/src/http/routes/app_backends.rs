//! `/app-backends/{extension_name}/session` (issue/revoke a short-lived
//! HttpOnly browser session for a ready Canvas App backend) and the HTTP
//! ingress `/app-backends/{extension_name}[/{path}]` that forwards a
//! request carrying that session to the backend on loopback — the
//! reference's bridge: the configured `app_backend_public_url` is a
//! separate browser origin, requests must arrive on it, the control
//! origin must be allowed, unsafe methods must come from the app origin.
//! WebSocket upgrades are bridged to the backend's socket (closed when the
//! session is revoked or expires); a refused upgrade answers 403.

use crate::config::Config;
use crate::http::error::{ApiError, HttpValidationError, json_response};
use crate::http::middleware::errors::Passthrough;
use crate::http::route_docs::routes;
use crate::http::session_keys::SESSION_KEY_HEADER;
use crate::http::state::SharedState;
use crate::service::canvas::sessions::SESSION_TTL;
use axum::Json;
use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::SESSION_API_KEY_HEADER;
use serde::Serialize;
use std::sync::OnceLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// The session cookie's name.
pub const COOKIE_NAME: &str = "oh_app_backend_session";
const APP_BACKEND_PATH: &str = "/app-backends";
const IFRAME_SANDBOX: &str =
    "allow-forms allow-modals allow-popups allow-same-origin allow-scripts";
/// Request headers never forwarded (hop-by-hop and credentials; the
/// session key header too, see [`is_withheld`]).
const HOP_BY_HOP: [&str; 13] = [
    "authorization",
    "cookie",
    "set-cookie",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// Whether a header (lowercase name) is never forwarded.
fn is_withheld(name: &str) -> bool {
    HOP_BY_HOP.contains(&name) || name.eq_ignore_ascii_case(SESSION_API_KEY_HEADER)
}

/// Browser bootstrap result for one running Canvas App backend.
#[derive(Debug, Serialize, ToSchema)]
pub struct AppBackendSessionResponse {
    /// Where the app is loaded from (no credential in it).
    pub ingress_url: String,
    /// When the session expires (UTC).
    pub expires_at: String,
    /// The iframe `sandbox` attribute to use.
    pub iframe_sandbox: String,
}

/// The session routes (documented) and the ingress (not documented).
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(
            create_app_backend_session,
            delete_app_backend_session
        ))
        .route(
            "/app-backends/{extension_name}",
            axum::routing::any(proxy_root),
        )
        .route(
            "/app-backends/{extension_name}/{*path}",
            axum::routing::any(proxy_path),
        )
}

/// `scheme://host:port` of an http(s) URL.
fn origin(value: &str) -> Option<String> {
    let url = url::Url::parse(value).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())?
        .to_ascii_lowercase();
    let port = url.port_or_known_default()?;
    Some(format!("{}://{host}:{port}", url.scheme()))
}

fn public_url(config: &Config) -> Result<String, ApiError> {
    let Some(value) = config
        .app_backend_public_url
        .as_deref()
        .filter(|v| !v.is_empty())
    else {
        return Err(ApiError::service_unavailable(
            "Canvas App backend ingress is not configured",
        ));
    };
    let ok = url::Url::parse(value)
        .map(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
        })
        .unwrap_or(false);
    if !ok {
        return Err(ApiError::service_unavailable(
            "Canvas App backend ingress is misconfigured",
        ));
    }
    Ok(value.trim_end_matches('/').to_string())
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The origin of the connection as the server saw it (forwarded headers
/// only when `trust_forwarded_headers`).
fn request_origin<B>(config: &Config, request: &axum::http::Request<B>) -> Option<String> {
    let headers = request.headers();
    let own_host = header_str(headers, "host")
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
        .unwrap_or_default();
    let (scheme, host) = if config.trust_forwarded_headers {
        let proto = header_str(headers, "x-forwarded-proto")
            .and_then(|p| p.split(',').next())
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or("http")
            .to_string();
        let host = header_str(headers, "x-forwarded-host")
            .and_then(|p| p.split(',').next())
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .unwrap_or(own_host);
        (proto, host)
    } else {
        ("http".to_string(), own_host)
    };
    let scheme = match scheme.as_str() {
        "ws" => "http".to_string(),
        "wss" => "https".to_string(),
        _ => scheme,
    };
    origin(&format!("{scheme}://{host}"))
}

fn require_ingress_host<B>(
    config: &Config,
    request: &axum::http::Request<B>,
    public: &str,
) -> Result<(), ApiError> {
    if request_origin(config, request) != origin(public) {
        return Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "Canvas App request must use the configured ingress origin",
        ));
    }
    Ok(())
}

fn allowed_control_origin(config: &Config, value: &str) -> bool {
    let Some(normalized) = origin(value) else {
        return false;
    };
    let host = url::Url::parse(value)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    if host == "localhost" || host == "127.0.0.1" {
        return true;
    }
    if config.docker_host_addr.as_deref() == Some(host.as_str()) {
        return true;
    }
    if config
        .allow_cors_origins
        .iter()
        .any(|c| origin(c).as_deref() == Some(normalized.as_str()))
    {
        return true;
    }
    config.allow_cors_origin_regex.as_deref().is_some_and(|re| {
        regex::Regex::new(&format!("^(?:{re})$")).is_ok_and(|r| r.is_match(value))
    })
}

fn require_bootstrap_origin<B>(
    config: &Config,
    request: &axum::http::Request<B>,
    public: &str,
) -> Result<(), ApiError> {
    require_ingress_host(config, request, public)?;
    let presented = header_str(request.headers(), "origin").unwrap_or("");
    if !allowed_control_origin(config, presented) {
        return Err(ApiError::forbidden("Origin is not allowed"));
    }
    if origin(presented) == origin(public) {
        return Err(ApiError::conflict(
            "Canvas App ingress must use a separate browser origin",
        ));
    }
    Ok(())
}

fn session_cookie_is_secure<B>(config: &Config, request: &axum::http::Request<B>) -> bool {
    let Some(o) = request_origin(config, request) else {
        return false;
    };
    let Ok(url) = url::Url::parse(&o) else {
        return false;
    };
    url.scheme() == "https"
        || matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        )
}

fn cookie_header<B>(
    config: &Config,
    request: &axum::http::Request<B>,
    name: &str,
    token: &str,
    max_age: u64,
) -> Result<HeaderValue, ApiError> {
    if !session_cookie_is_secure(config, request) {
        return Err(ApiError::service_unavailable(
            "Canvas App sessions require HTTPS or a loopback secure context",
        ));
    }
    let value = if token.is_empty() { "\"\"" } else { token };
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={value}; HttpOnly; Max-Age={max_age}; Path={APP_BACKEND_PATH}/{name}; SameSite=none; Secure; Partitioned"
    ))
    .map_err(ApiError::internal)
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v.trim_matches('"').to_string())
}

fn require_key(state: &SharedState, headers: &HeaderMap) -> Result<(), ApiError> {
    if state
        .session_keys
        .accepts(header_str(headers, SESSION_KEY_HEADER))
    {
        Ok(())
    } else {
        Err(ApiError::unauthorized())
    }
}

async fn ready_endpoint(state: &SharedState, name: &str) -> Result<(String, u16), ApiError> {
    state
        .canvas
        .backends()
        .ready_endpoint(name)
        .await
        .ok_or_else(|| ApiError::service_unavailable("Canvas App backend is not ready"))
}

/// Issue a short-lived HttpOnly session for one ready app backend (call it
/// on the ingress origin with the session key and the Canvas page's `Origin`).
#[utoipa::path(post, path = "/app-backends/{extension_name}/session", tag = "Canvas App Backends",
    operation_id = "create_app_backend_session_endpoint_app_backends__extension_name__session_post",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Installed Canvas App name")),
    responses((status = 200, description = "Successful Response", body = AppBackendSessionResponse),
              (status = 401, response = inline(crate::http::session_keys::MissingSessionKey)),
              (status = 403, description = "Origin is not allowed"),
              (status = 409, description = "Ingress does not use a separate browser origin"),
              (status = 503, description = "Backend is unavailable or ingress is not configured"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn create_app_backend_session(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    require_key(&state, request.headers())?;
    let name = super::canvas_extensions::checked_name(name)?;
    let config = &state.config;
    let public = public_url(config)?;
    require_bootstrap_origin(config, &request, &public)?;
    let endpoint = ready_endpoint(&state, &name).await?;
    let secure = session_cookie_is_secure(config, &request);
    if !secure {
        return Err(ApiError::service_unavailable(
            "Canvas App sessions require HTTPS or a loopback secure context",
        ));
    }
    let (token, expires_at) = state
        .canvas
        .sessions()
        .create(&name, endpoint)
        .map_err(ApiError::internal)?;
    let cookie = cookie_header(config, &request, &name, &token, SESSION_TTL.as_secs())?;
    let expires = chrono::DateTime::from_timestamp_micros((expires_at * 1e6) as i64)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let body = AppBackendSessionResponse {
        ingress_url: format!("{public}{APP_BACKEND_PATH}/{name}/"),
        expires_at: expires,
        iframe_sandbox: IFRAME_SANDBOX.into(),
    };
    let mut response = Json(body).into_response();
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Revoke the current app-scoped browser session.
#[utoipa::path(delete, path = "/app-backends/{extension_name}/session", tag = "Canvas App Backends",
    operation_id = "delete_app_backend_session_endpoint_app_backends__extension_name__session_delete",
    security(("APIKeyHeader" = [])),
    params(("extension_name" = String, Path, pattern = "^[a-z0-9]+(?:-[a-z0-9]+)*$", min_length = 1, max_length = 255, description = "Installed Canvas App name")),
    responses((status = 204, description = "Browser session revoked and cookie cleared"),
              (status = 401, response = inline(crate::http::session_keys::MissingSessionKey)),
              (status = 403, description = "Origin is not allowed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn delete_app_backend_session(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    require_key(&state, request.headers())?;
    let name = super::canvas_extensions::checked_name(name)?;
    let config = &state.config;
    let public = public_url(config)?;
    require_bootstrap_origin(config, &request, &public)?;
    let token = session_token(request.headers());
    state.canvas.sessions().revoke_token(token.as_deref());
    let cookie = cookie_header(config, &request, &name, "", 0)?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Rejects traversal in the once-decoded path, decoding to a fixed point.
fn validate_proxy_path(path: &str) -> Result<(), ApiError> {
    let invalid = || ApiError::bad_request("Invalid backend path");
    let mut candidate = path.to_string();
    let mut converged = false;
    for _ in 0..=path.len() {
        let decoded = percent_encoding::percent_decode_str(&candidate)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == candidate {
            converged = true;
            break;
        }
        candidate = decoded;
    }
    if !converged || candidate.contains('\\') || candidate.split('/').any(|p| p == "." || p == "..")
    {
        return Err(invalid());
    }
    Ok(())
}

/// The query without the session credentials.
fn strip_auth_query(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
            let key = percent_encoding::percent_decode_str(&key.replace('+', " "))
                .decode_utf8_lossy()
                .to_ascii_lowercase();
            !(matches!(key.as_str(), "session_api_key" | "authorization")
                || key.eq_ignore_ascii_case(SESSION_API_KEY_HEADER))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The forwarding client, built on first use (`None` when it cannot be).
fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            openhands_client::http_client(
                &openhands_client::HttpOptions::per_request(Duration::from_secs(10))
                    .read_timeout(Duration::from_secs(300))
                    .no_proxy()
                    .no_redirects(),
            )
            .inspect_err(|e| tracing::error!(error = %e, "canvas ingress client"))
            .ok()
        })
        .as_ref()
}

async fn proxy_root(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy(state, name, String::new(), request).await
}

async fn proxy_path(
    State(state): State<SharedState>,
    Path((name, path)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy(state, name, path, request).await
}

fn is_websocket(headers: &HeaderMap) -> bool {
    header_str(headers, "upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"))
}

async fn proxy(
    state: SharedState,
    name: String,
    path: String,
    request: Request,
) -> Result<Response, ApiError> {
    if is_websocket(request.headers()) {
        return Ok(proxy_socket(state, name, path, request).await);
    }
    let name = super::canvas_extensions::checked_name(name)?;
    validate_proxy_path(&path)?;
    let config = &state.config;
    let public = public_url(config)?;
    require_ingress_host(config, &request, &public)?;
    if !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        let presented = header_str(request.headers(), "origin");
        if presented.and_then(origin).is_none() || presented.and_then(origin) != origin(&public) {
            return Err(ApiError::forbidden("Origin is not allowed"));
        }
    }
    let endpoint = ready_endpoint(&state, &name).await?;
    let token = session_token(request.headers());
    if !state
        .canvas
        .sessions()
        .authorize(token.as_deref(), &name, &endpoint)
    {
        return Err(ApiError::unauthorized());
    }
    if request.headers().contains_key("x-expose-secrets") {
        return Err(ApiError::unprocessable(
            "Runtime secret exposure is unsupported",
        ));
    }
    // The raw (still encoded) path after `/app-backends/{name}`.
    let prefix = format!("{APP_BACKEND_PATH}/{name}");
    let raw = request.uri().path().strip_prefix(&prefix).unwrap_or("/");
    let mut upstream = if raw.is_empty() {
        "/".to_string()
    } else {
        raw.to_string()
    };
    let query = strip_auth_query(request.uri().query().unwrap_or(""));
    if !query.is_empty() {
        upstream.push('?');
        upstream.push_str(&query);
    }
    let (host, port) = endpoint;
    let url = format!("http://{host}:{port}{upstream}");
    let (parts, body) = request.into_parts();
    let mut headers = reqwest::header::HeaderMap::new();
    for (k, v) in &parts.headers {
        if !is_withheld(k.as_str()) {
            headers.append(k.clone(), v.clone());
        }
    }
    let has_body = parts.headers.contains_key(header::CONTENT_LENGTH)
        || parts.headers.contains_key(header::TRANSFER_ENCODING);
    if let Some(len) = parts.headers.get(header::CONTENT_LENGTH) {
        headers.insert(header::CONTENT_LENGTH, len.clone());
    }
    let Some(client) = client() else {
        return Ok(plain_error(
            StatusCode::BAD_GATEWAY,
            "Canvas App backend unreachable",
        ));
    };
    let mut builder = client.request(parts.method.clone(), url).headers(headers);
    if has_body {
        builder = builder.body(reqwest::Body::wrap_stream(body.into_data_stream()));
    }
    let upstream = match builder.send().await {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "Canvas App backend connection failed");
            return Ok(plain_error(
                StatusCode::BAD_GATEWAY,
                "Canvas App backend unreachable",
            ));
        }
    };
    let status = upstream.status();
    if matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
        && upstream.headers().contains_key(header::LOCATION)
    {
        return Ok(plain_error(
            StatusCode::BAD_GATEWAY,
            "Upstream redirect is not allowed",
        ));
    }
    let mut response = Response::builder().status(status.as_u16());
    for (k, v) in upstream.headers() {
        let n = k.as_str();
        if !is_withheld(n) && n != "date" && n != "server" {
            response = response.header(k, v);
        }
    }
    let mut response = response
        .body(Body::from_stream(upstream.bytes_stream()))
        .map_err(ApiError::internal)?;
    response.extensions_mut().insert(Passthrough);
    Ok(response)
}

/// The WebSocket ingress: the same checks as HTTP (the app origin always
/// required); any refusal is a 403 before the upgrade.
async fn proxy_socket(
    state: SharedState,
    name: String,
    path: String,
    request: Request,
) -> Response {
    let (mut parts, _body) = request.into_parts();
    let mut head = axum::http::Request::new(());
    *head.uri_mut() = parts.uri.clone();
    *head.headers_mut() = parts.headers.clone();
    let request = head;
    let checked = async {
        let name = super::canvas_extensions::checked_name(name)?;
        validate_proxy_path(&path)?;
        let public = public_url(&state.config)?;
        require_ingress_host(&state.config, &request, &public)?;
        let presented = header_str(request.headers(), "origin");
        if presented.and_then(origin).is_none() || presented.and_then(origin) != origin(&public) {
            return Err(ApiError::forbidden("Origin is not allowed"));
        }
        let endpoint = ready_endpoint(&state, &name).await?;
        let token = session_token(request.headers());
        let grant = state
            .canvas
            .sessions()
            .grant(token.as_deref(), &name, &endpoint)
            .ok_or_else(ApiError::unauthorized)?;
        Ok::<_, ApiError>((name, endpoint, grant))
    }
    .await;
    let Ok((name, (host, port), grant)) = checked else {
        return ApiError::forbidden("Forbidden").into_response();
    };
    let prefix = format!("{APP_BACKEND_PATH}/{name}");
    let raw = request.uri().path().strip_prefix(&prefix).unwrap_or("/");
    let mut url = format!(
        "ws://{host}:{port}{}",
        if raw.is_empty() { "/" } else { raw }
    );
    let query = strip_auth_query(request.uri().query().unwrap_or(""));
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query);
    }
    match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(upgrade) => upgrade
            .read_buffer_size(crate::http::sockets::READ_BUFFER_BYTES)
            .on_upgrade(move |socket| bridge_socket(socket, url, grant.revoked, grant.ttl)),
        Err(rejection) => rejection.into_response(),
    }
}

/// Bridges an accepted client socket to the backend's socket at `url`
/// until either side closes, the session is revoked or it expires.
async fn bridge_socket(client: WebSocket, url: String, revoked: CancellationToken, ttl: Duration) {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Up;
    let connect = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async(url),
    )
    .await;
    let (mut client_tx, mut client_rx) = client.split();
    let upstream = match connect {
        Ok(Ok((ws, _))) => ws,
        _ => {
            let _ = client_tx
                .send(WsMessage::Close(Some(CloseFrame {
                    code: 1011,
                    reason: "Canvas App backend unreachable".into(),
                })))
                .await;
            return;
        }
    };
    let (mut up_tx, mut up_rx) = upstream.split();
    let expiry = tokio::time::sleep(ttl);
    tokio::pin!(expiry);
    loop {
        tokio::select! {
            m = client_rx.next() => {
                let out = match m {
                    Some(Ok(WsMessage::Text(t))) => Up::text(t.as_str()),
                    Some(Ok(WsMessage::Binary(b))) => Up::binary(b),
                    Some(Ok(WsMessage::Ping(b))) => Up::Ping(b),
                    Some(Ok(WsMessage::Pong(b))) => Up::Pong(b),
                    _ => break,
                };
                if up_tx.send(out).await.is_err() {
                    break;
                }
            }
            m = up_rx.next() => {
                let out = match m {
                    Some(Ok(Up::Text(t))) => WsMessage::Text(t.as_str().into()),
                    Some(Ok(Up::Binary(b))) => WsMessage::Binary(b),
                    Some(Ok(Up::Ping(b))) => WsMessage::Ping(b),
                    Some(Ok(Up::Pong(b))) => WsMessage::Pong(b),
                    Some(Ok(Up::Frame(_))) => continue,
                    _ => break,
                };
                if client_tx.send(out).await.is_err() {
                    break;
                }
            }
            () = revoked.cancelled() => break,
            () = &mut expiry => break,
        }
    }
    let _ = client_tx.send(WsMessage::Close(None)).await;
    let _ = up_tx.close().await;
}

/// `{"detail": detail}` with a 5xx status (the reference's plain
/// `HTTPException` shape, not the unhandled-error one).
fn plain_error(status: StatusCode, detail: &str) -> Response {
    json_response(status, &serde_json::json!({ "detail": detail }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized() {
        assert_eq!(
            origin("http://Example.com").as_deref(),
            Some("http://example.com:80")
        );
        assert_eq!(
            origin("https://a.b:8443/x").as_deref(),
            Some("https://a.b:8443")
        );
        assert_eq!(origin("ftp://a"), None);
        assert_eq!(origin(""), None);
    }

    #[test]
    fn traversal_is_refused_through_any_encoding_depth() {
        assert!(validate_proxy_path("api/items").is_ok());
        assert!(validate_proxy_path("").is_ok());
        assert!(validate_proxy_path("a/../b").is_err());
        assert!(validate_proxy_path("a/%2e%2e/b").is_err());
        assert!(validate_proxy_path("a/%252e%252e/b").is_err());
        assert!(validate_proxy_path("a\\b").is_err());
        assert!(validate_proxy_path("./x").is_err());
    }

    #[test]
    fn credentials_are_stripped_from_the_query() {
        assert_eq!(
            strip_auth_query("a=1&session_api_key=k&B=2&Authorization=x"),
            "a=1&B=2"
        );
        assert_eq!(strip_auth_query(""), "");
    }

    #[test]
    fn the_session_cookie_is_found() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; oh_app_backend_session=tok; b=2"),
        );
        assert_eq!(session_token(&h).as_deref(), Some("tok"));
        assert_eq!(session_token(&HeaderMap::new()), None);
    }
}
