//! A stand-in for OpenAI's auth server on loopback (no OpenAI is reachable
//! from tests), answering what the ChatGPT subscription sign-in asks:
//!
//! * browser sign-in: `GET /oauth/authorize` checks the reference's
//!   parameters (client id, `response_type=code`, an S256 challenge, a
//!   `state`) and, as the user's decision set by [`Decision`], redirects
//!   to the `redirect_uri` with a code and the same state, with an
//!   `access_denied` error, or with a forged state;
//! * device sign-in: `POST /api/accounts/deviceauth/usercode` hands out a
//!   code; `POST /api/accounts/deviceauth/token` answers 403 (pending) to
//!   the first poll, then an authorization code and its verifier;
//! * `POST /oauth/token`: the code exchange (a browser code needs the
//!   verifier of its challenge and the same redirect URI) and refresh.
//!
//! Access tokens are unsigned JWTs carrying a ChatGPT account id
//! ([`access_token`]). Every authorization and token request is recorded.
//! [`visit`] plays the user's browser: it opens a URL and follows the
//! redirects.

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::task::AbortHandle;

/// The ChatGPT account id in every access token.
pub const ACCOUNT_ID: &str = "acct-standin";
/// The code the device sign-in shows.
pub const USER_CODE: &str = "ABCD-1234";
/// The device code's verifier (handed out with its authorization code).
const DEVICE_VERIFIER: &str = "device-verifier";

/// What the user does on the authorization page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Approves: redirect with a code and the request's state.
    Approve,
    /// Declines: redirect with `error=access_denied`.
    Deny,
    /// A forged redirect: a code with another state.
    ForgeState,
}

/// The access token number `n` (an unsigned JWT with [`ACCOUNT_ID`]).
pub fn access_token(n: u32) -> String {
    let enc = |v: Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!(
        "{}.{}.sig",
        enc(json!({"alg": "none"})),
        enc(json!({"n": n, "https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT_ID}}))
    )
}

#[derive(Default)]
struct Inner {
    decision: Option<Decision>,
    /// code → (challenge, redirect_uri); device codes have no challenge.
    codes: HashMap<String, (Option<String>, String)>,
    authorizations: Vec<HashMap<String, String>>,
    token_requests: Vec<HashMap<String, String>>,
    polls: u32,
    issued: u32,
    refresh_tokens: Vec<String>,
}

type Shared = Arc<Mutex<Inner>>;

/// The stand-in, listening until dropped.
pub struct OpenAiAuthStandIn {
    /// The issuer's base URL (`http://127.0.0.1:<port>`).
    pub url: String,
    inner: Shared,
    task: AbortHandle,
}

impl Drop for OpenAiAuthStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn s256(verifier: &str) -> String {
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

fn bad(status: StatusCode, error: &str) -> Response {
    (status, axum::Json(json!({"error": error}))).into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = s.lock();
    inner.authorizations.push(q.clone());
    let ok = q.get("client_id").is_some_and(|c| !c.is_empty())
        && q.get("response_type").map(String::as_str) == Some("code")
        && q.get("code_challenge_method").map(String::as_str) == Some("S256")
        && q.get("code_challenge").is_some_and(|c| c.len() == 43)
        && q.get("state").is_some_and(|c| !c.is_empty());
    let Some(redirect) = q.get("redirect_uri").filter(|_| ok) else {
        return bad(StatusCode::BAD_REQUEST, "invalid_request");
    };
    let state = q.get("state").cloned().unwrap_or_default();
    let enc = |pairs: &[(&str, &str)]| {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    };
    let code = format!("browser-code-{}", inner.codes.len() + 1);
    let query = match inner.decision.unwrap_or(Decision::Approve) {
        Decision::Deny => enc(&[
            ("error", "access_denied"),
            ("error_description", "The user declined the sign-in"),
            ("state", &state),
        ]),
        d => {
            inner.codes.insert(
                code.clone(),
                (q.get("code_challenge").cloned(), redirect.clone()),
            );
            let state = if d == Decision::ForgeState {
                "forged"
            } else {
                &state
            };
            enc(&[("code", &code), ("state", state)])
        }
    };
    Redirect::to(&format!("{redirect}?{query}")).into_response()
}

async fn usercode(State(_): State<Shared>, body: axum::Json<Value>) -> Response {
    if body.get("client_id").and_then(Value::as_str).is_none() {
        return bad(StatusCode::BAD_REQUEST, "invalid_request");
    }
    axum::Json(json!({"device_auth_id": "dev-1", "user_code": USER_CODE, "interval": "1"}))
        .into_response()
}

async fn device_token(State(s): State<Shared>) -> Response {
    let mut inner = s.lock();
    inner.polls += 1;
    if inner.polls == 1 {
        return (StatusCode::FORBIDDEN, "pending").into_response();
    }
    inner
        .codes
        .insert("device-code".into(), (None, String::new()));
    axum::Json(json!({"authorization_code": "device-code", "code_verifier": DEVICE_VERIFIER}))
        .into_response()
}

async fn token(State(s): State<Shared>, form: axum::extract::RawForm) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&form.0).into_owned().collect();
    let mut inner = s.lock();
    inner.token_requests.push(form.clone());
    let get = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if get("client_id").is_empty() {
        return bad(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    match get("grant_type") {
        "authorization_code" => {
            let Some((challenge, redirect)) = inner.codes.remove(get("code")) else {
                return bad(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let verified = match &challenge {
                Some(c) => *c == s256(get("code_verifier")) && redirect == get("redirect_uri"),
                None => get("code_verifier") == DEVICE_VERIFIER,
            };
            if !verified {
                return bad(StatusCode::BAD_REQUEST, "invalid_grant");
            }
        }
        "refresh_token" => {
            if !inner
                .refresh_tokens
                .iter()
                .any(|r| r == get("refresh_token"))
            {
                return bad(StatusCode::BAD_REQUEST, "invalid_grant");
            }
        }
        _ => return bad(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
    inner.issued += 1;
    let n = inner.issued;
    let refresh = format!("refresh-{n}");
    inner.refresh_tokens.push(refresh.clone());
    axum::Json(
        json!({"access_token": access_token(n), "refresh_token": refresh,
        "id_token": access_token(n), "expires_in": 3600}),
    )
    .into_response()
}

impl OpenAiAuthStandIn {
    /// Starts on a free loopback port; the user approves.
    pub async fn start() -> std::io::Result<Self> {
        let inner: Shared = Arc::default();
        let app = Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/api/accounts/deviceauth/usercode", post(usercode))
            .route("/api/accounts/deviceauth/token", post(device_token))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            url,
            inner,
            task: task.abort_handle(),
        })
    }

    /// What the user does on the next authorization pages.
    pub fn set_decision(&self, decision: Decision) {
        self.inner.lock().decision = Some(decision);
    }

    /// The query of every authorization page opened.
    pub fn authorizations(&self) -> Vec<HashMap<String, String>> {
        self.inner.lock().authorizations.clone()
    }

    /// The form of every `/oauth/token` request.
    pub fn token_requests(&self) -> Vec<HashMap<String, String>> {
        self.inner.lock().token_requests.clone()
    }

    /// How many access tokens were issued.
    pub fn issued(&self) -> u32 {
        self.inner.lock().issued
    }
}

/// The user's browser: opens `url`, follows redirects, and answers the
/// last page's status and body.
pub async fn visit(url: &str) -> Result<(u16, String), reqwest::Error> {
    #[allow(clippy::disallowed_methods)]
    let client = reqwest::Client::new();
    let response = client.get(url).send().await?;
    let status = response.status().as_u16();
    let body = response.text().await?;
    Ok((status, body))
}
