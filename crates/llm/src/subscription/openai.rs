//! ChatGPT (OpenAI subscription) sign-in by device code and the Codex
//! backend it opens, as the reference's `openhands.sdk.llm.auth.openai`
//! (the browser sign-in is `browser`):
//!
//! - sign-in: `POST {issuer}/api/accounts/deviceauth/usercode` (the Codex
//!   CLI's public client id) gives a user code to type at
//!   `{issuer}/codex/device`; `POST {issuer}/api/accounts/deviceauth/token`
//!   is polled (403/404: still pending) until it hands an authorization code
//!   and its PKCE verifier, exchanged at `POST {issuer}/oauth/token`
//!   (redirect `{issuer}/deviceauth/callback`); expired access tokens are
//!   refreshed there (`grant_type=refresh_token`).
//! - calls: the Responses API at `https://chatgpt.com/backend-api/codex`
//!   with the access token as bearer, `chatgpt-account-id` from the token's
//!   claims and the Codex CLI's headers; always streamed, `store: false`,
//!   no temperature, output limit, `include`, reasoning or cache retention;
//!   short fixed instructions with the system prompt moved into the first
//!   user message; earlier reasoning items dropped (the endpoint keeps none).
//!
//! Both base URLs are settings ([`Endpoints`]; `OH_OPENAI_AUTH_ISSUER`,
//! `OH_OPENAI_CODEX_BASE_URL`), so tests run against local stand-ins.

use super::store::{CredentialStore, OAuthCredentials, StoreError, now_ms};
use crate::error::LlmError;
use base64::Engine;
use openhands_wire::LlmConfig;
use openhands_wire::llm_config::ApiMode;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The vendor name.
pub const VENDOR: &str = "openai";
/// The Codex CLI's public OAuth client id (the reference's).
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The reference's issuer.
pub const DEFAULT_ISSUER: &str = "https://auth.openai.com";
/// The Codex backend (its Responses API is `<base>/responses`).
pub const CODEX_API_BASE: &str = "https://chatgpt.com/backend-api/codex";
/// Models reachable through the subscription (the reference's list).
pub const CODEX_MODELS: [&str; 8] = [
    "gpt-6.1-sol",
    "gpt-6-sol",
    "gpt-6-luna",
    "gpt-6-astra",
    "gpt-5.6-sol",
    "gpt-5.6-terra",
    "gpt-5.6-luna",
    "gpt-5.5",
];
/// The model `subscription_login` picks by default.
pub const DEFAULT_MODEL: &str = "gpt-5.5";
/// How long a device login may be polled (the reference's 15 minutes).
pub const DEVICE_CODE_TIMEOUT: Duration = Duration::from_secs(900);
/// The instructions of every Codex call (the endpoint refuses long ones).
pub const DEFAULT_INSTRUCTIONS: &str = "You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve tasks.";
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed sign-in step.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The issuer refused or could not be reached.
    #[error("{0}")]
    Upstream(String),
    /// A request this implementation does not support.
    #[error("{0}")]
    Unsupported(String),
    /// Nobody signed in (or the stored tokens could not be refreshed).
    #[error("OpenAI subscription login is required")]
    LoginRequired,
    /// The device login was not completed in time.
    #[error("Device auth timed out after {0} seconds")]
    TimedOut(u64),
    /// The browser sign-in's redirect did not arrive in time.
    #[error("the browser sign-in was not completed within {0:?}")]
    BrowserTimedOut(Duration),
    /// The browser sign-in's redirect refused the sign-in or could not be
    /// trusted (an error, no code, another sign-in's state).
    #[error("{0}")]
    Refused(String),
    /// Another program holds the callback port.
    #[error(
        "the sign-in's callback port {0} is taken by another program: free it, or pick another \
         port with OPENHANDS_OAUTH_PORT"
    )]
    PortInUse(u16),
    /// The user did not accept the terms of the ChatGPT sign-in.
    #[error("ChatGPT sign-in cancelled: the terms were not accepted")]
    Declined,
    /// No terminal to ask for the terms' acceptance, which was never given.
    #[error(
        "ChatGPT sign-in needs the terms accepted once in an interactive terminal \
         (or skip_consent when they were accepted elsewhere)"
    )]
    ConsentNeeded,
    /// The credentials file.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<AuthError> for LlmError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Unsupported(m) => LlmError::Config(m),
            other => LlmError::Authentication(other.to_string()),
        }
    }
}

/// Why a token request got no JSON answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenRequestError {
    /// No HTTP client could be built.
    #[error("cannot build HTTP client: {0}")]
    NoClient(#[source] openhands_client::ClientError),
    /// The request failed.
    #[error("{0}")]
    Send(#[source] reqwest::Error),
    /// The issuer answered with an error status (the code).
    #[error("{0}")]
    Status(u16),
    /// The answer is not JSON.
    #[error("{0}")]
    Body(#[source] reqwest::Error),
}

fn upstream(message: impl Into<String>) -> AuthError {
    AuthError::Upstream(message.into())
}

/// The two servers of the subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The OAuth issuer (no trailing slash).
    pub issuer: String,
    /// The Codex backend (no trailing slash).
    pub codex_base: String,
}

impl Default for Endpoints {
    fn default() -> Self {
        Self {
            issuer: DEFAULT_ISSUER.into(),
            codex_base: CODEX_API_BASE.into(),
        }
    }
}

impl Endpoints {
    /// The defaults, each replaced by `OH_OPENAI_AUTH_ISSUER` /
    /// `OH_OPENAI_CODEX_BASE_URL` when set.
    pub fn from_env() -> Self {
        let var = |k: &str| crate::provider_env::var(k).filter(|v| !v.trim().is_empty());
        let d = Self::default();
        Self::new(
            &var("OH_OPENAI_AUTH_ISSUER").unwrap_or(d.issuer),
            &var("OH_OPENAI_CODEX_BASE_URL").unwrap_or(d.codex_base),
        )
    }

    /// Endpoints at these two base URLs.
    pub fn new(issuer: &str, codex_base: &str) -> Self {
        Self {
            issuer: issuer.trim().trim_end_matches('/').into(),
            codex_base: codex_base.trim().trim_end_matches('/').into(),
        }
    }
}

/// What the user is shown to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    /// Where the user types the code.
    pub verification_url: String,
    /// The code to type.
    pub user_code: String,
    /// The issuer's id of this login (never shown).
    pub device_auth_id: String,
    /// How often to poll.
    pub interval: Duration,
}

/// Sign-in, refresh and logout against one issuer, over one credential store.
#[derive(Debug, Clone)]
pub struct OpenAiAuth {
    endpoints: Endpoints,
    store: CredentialStore,
    /// The client, or why it could not be built (answered on use).
    http: Result<reqwest::Client, openhands_client::ClientError>,
}

fn expires_at(tokens: &Value) -> i64 {
    let secs = tokens
        .get("expires_in")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    now_ms().saturating_add(secs.saturating_mul(1000))
}

/// The credentials of a token answer (`access_token`, `refresh_token`,
/// `expires_in`).
pub(crate) fn credentials_from(tokens: &Value) -> Result<OAuthCredentials, AuthError> {
    let field = |k: &str| tokens.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(access_token), Some(refresh_token)) = (field("access_token"), field("refresh_token"))
    else {
        return Err(upstream("Invalid token response from OpenAI"));
    };
    Ok(OAuthCredentials {
        vendor: VENDOR.into(),
        access_token,
        refresh_token,
        expires_at: expires_at(tokens),
    })
}

impl OpenAiAuth {
    /// Talks to `endpoints`, keeps tokens in `store`.
    pub fn new(endpoints: Endpoints, store: CredentialStore) -> Self {
        let http = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
            HTTP_TIMEOUT,
        ));
        Self {
            endpoints,
            store,
            http,
        }
    }

    fn http(&self) -> Result<&reqwest::Client, AuthError> {
        self.http
            .as_ref()
            .map_err(|e| upstream(TokenRequestError::NoClient(e.clone()).to_string()))
    }

    /// The endpoints.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The credential store.
    pub fn store(&self) -> &CredentialStore {
        &self.store
    }

    /// The stored credentials, if any (not refreshed).
    pub async fn credentials(&self) -> Option<OAuthCredentials> {
        self.store.get(VENDOR).await
    }

    /// Asks the issuer for a device code.
    pub async fn request_device_code(&self) -> Result<DeviceCode, AuthError> {
        let issuer = &self.endpoints.issuer;
        let response = self
            .http()?
            .post(format!("{issuer}/api/accounts/deviceauth/usercode"))
            .json(&json!({"client_id": CLIENT_ID}))
            .send()
            .await
            .map_err(|e| upstream(format!("Device code request failed: {e}")))?;
        let status = response.status();
        if status.as_u16() == 404 {
            return Err(upstream(
                "Device code login is not enabled for this OpenAI server. Use browser login instead.",
            ));
        }
        if !status.is_success() {
            return Err(upstream(format!(
                "Device code request failed with status {}",
                status.as_u16()
            )));
        }
        let invalid = || upstream("Invalid device code response from OpenAI");
        let data: Value = response.json().await.map_err(|_| invalid())?;
        let interval = match data.get("interval") {
            None => 5,
            Some(Value::Number(n)) => n.as_i64().ok_or_else(invalid)?,
            Some(Value::String(s)) => s.trim().parse::<i64>().map_err(|_| invalid())?,
            Some(_) => return Err(invalid()),
        };
        let user_code = ["user_code", "usercode"]
            .iter()
            .find_map(|k| {
                data.get(*k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            })
            .ok_or_else(invalid)?;
        let device_auth_id = match data.get("device_auth_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(invalid()),
        };
        Ok(DeviceCode {
            verification_url: format!("{issuer}/codex/device"),
            user_code: user_code.to_string(),
            device_auth_id,
            interval: Duration::from_secs(interval.max(1).unsigned_abs()),
        })
    }

    /// Polls a device login once: `None` while the user has not finished;
    /// then the tokens (not saved).
    pub async fn poll_device_once(
        &self,
        device: &DeviceCode,
    ) -> Result<Option<OAuthCredentials>, AuthError> {
        let issuer = &self.endpoints.issuer;
        let response = self
            .http()?
            .post(format!("{issuer}/api/accounts/deviceauth/token"))
            .json(&json!({"device_auth_id": device.device_auth_id, "user_code": device.user_code}))
            .send()
            .await
            .map_err(|e| upstream(format!("Device auth failed: {e}")))?;
        let status = response.status().as_u16();
        if matches!(status, 403 | 404) {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(upstream(format!("Device auth failed with status {status}")));
        }
        let invalid = || upstream("Invalid device token response from OpenAI");
        let data: Value = response.json().await.map_err(|_| invalid())?;
        let text = |k: &str| data.get(k).and_then(Value::as_str).ok_or_else(invalid);
        let tokens = self
            .token_request(&[
                ("grant_type", "authorization_code"),
                ("code", text("authorization_code")?),
                ("redirect_uri", &format!("{issuer}/deviceauth/callback")),
                ("client_id", CLIENT_ID),
                ("code_verifier", text("code_verifier")?),
            ])
            .await
            .map_err(|s| upstream(format!("Token exchange failed: {s}")))?;
        credentials_from(&tokens).map(Some)
    }

    /// The whole device login: asks for a code, hands it to `show` (the
    /// caller prints it), polls until the user finished (or `timeout`),
    /// saves and returns the credentials.
    pub async fn login_device(
        &self,
        show: impl FnOnce(&DeviceCode),
        timeout: Duration,
    ) -> Result<OAuthCredentials, AuthError> {
        let device = self.request_device_code().await?;
        show(&device);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(creds) = self.poll_device_once(&device).await? {
                self.store.save(&creds).await?;
                return Ok(creds);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(AuthError::TimedOut(timeout.as_secs()));
            }
            tokio::time::sleep(device.interval.min(deadline - now)).await;
        }
    }

    /// A form POST to `/oauth/token`: the JSON answer, or the failure.
    pub(crate) async fn token_request(
        &self,
        form: &[(&str, &str)],
    ) -> Result<Value, TokenRequestError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = self
            .http
            .as_ref()
            .map_err(|e| TokenRequestError::NoClient(e.clone()))?
            .post(format!("{}/oauth/token", self.endpoints.issuer))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(TokenRequestError::Send)?;
        let status = response.status();
        if !status.is_success() {
            return Err(TokenRequestError::Status(status.as_u16()));
        }
        response.json().await.map_err(TokenRequestError::Body)
    }

    /// New tokens for `creds` (the refresh token kept when the issuer
    /// sends none), saved.
    pub async fn refresh(&self, creds: &OAuthCredentials) -> Result<OAuthCredentials, AuthError> {
        let tokens = self
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &creds.refresh_token),
                ("client_id", CLIENT_ID),
            ])
            .await
            .map_err(|s| upstream(format!("Token refresh failed: {s}")))?;
        let access = tokens
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| upstream("Invalid token response from OpenAI"))?;
        let updated = OAuthCredentials {
            vendor: VENDOR.into(),
            access_token: access.to_string(),
            refresh_token: tokens
                .get("refresh_token")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(&creds.refresh_token)
                .to_string(),
            expires_at: expires_at(&tokens),
        };
        self.store.save(&updated).await?;
        Ok(updated)
    }

    /// The stored credentials, refreshed first when expired; `None` when
    /// nobody signed in.
    pub async fn refresh_if_needed(&self) -> Result<Option<OAuthCredentials>, AuthError> {
        match self.credentials().await {
            None => Ok(None),
            Some(c) if !c.is_expired() => Ok(Some(c)),
            Some(c) => {
                tracing::info!("refreshing the OpenAI subscription access token");
                self.refresh(&c).await.map(Some)
            }
        }
    }

    /// Forgets the stored credentials; whether there were any.
    pub async fn logout(&self) -> Result<bool, AuthError> {
        Ok(self.store.delete(VENDOR).await?)
    }
}

/// The ChatGPT account id in an access token's claims
/// (`https://api.openai.com/auth` → `chatgpt_account_id`), for the
/// `chatgpt-account-id` header. The claims are read, not verified: the
/// token goes only to the backend that checks it.
pub fn account_id(access_token: &str) -> Option<String> {
    let payload = access_token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get("https://api.openai.com/auth")?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The Codex CLI's headers, as the reference sends them.
fn codex_headers() -> Map<String, Value> {
    let mut h = Map::new();
    h.insert("originator".into(), json!("codex_cli_rs"));
    h.insert("OpenAI-Beta".into(), json!("responses=experimental"));
    h.insert(
        "User-Agent".into(),
        json!(format!(
            "openhands-sdk ({}; {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        )),
    );
    h
}

/// The model name without its `openai/` prefix.
fn bare_model(model: &str) -> &str {
    model.strip_prefix("openai/").unwrap_or(model)
}

/// Refuses models the subscription does not offer.
pub fn check_model(model: &str) -> Result<(), AuthError> {
    let bare = bare_model(model);
    if CODEX_MODELS.contains(&bare) {
        return Ok(());
    }
    let mut models = CODEX_MODELS.to_vec();
    models.sort_unstable();
    Err(AuthError::Unsupported(format!(
        "Model '{bare}' is not supported for subscription access. Supported models: {}",
        models.join(", ")
    )))
}

/// The configuration of an LLM on the subscription (what the reference's
/// `create_llm` builds): the model under `openai/`, the Codex backend,
/// streamed, no API key, `auth_type: subscription`.
pub fn llm_config(model: &str, endpoints: &Endpoints) -> Result<LlmConfig, AuthError> {
    check_model(model)?;
    let mut config = LlmConfig::new(format!("openai/{}", bare_model(model)));
    config.auth_type = "subscription".into();
    config
        .extra
        .insert("subscription_vendor".into(), json!(VENDOR));
    config.extra.insert("is_subscription".into(), json!(true));
    Ok(runtime_config(&config, &endpoints.codex_base))
}

/// `config` (`auth_type: subscription`) as it is called: the Codex backend
/// as base URL, the Responses API, streamed, no key, no temperature or
/// output limit, `store: false`, the Codex CLI's headers under the
/// caller's own extra headers. Other settings (usage id, retries,
/// timeouts, logging) are kept.
pub fn runtime_config(config: &LlmConfig, codex_base: &str) -> LlmConfig {
    let mut c = config.clone();
    c.model = format!("openai/{}", bare_model(&config.model));
    c.base_url = Some(codex_base.to_string());
    c.api_key = None;
    c.api_mode = ApiMode::Responses;
    c.stream = true;
    c.temperature = None;
    c.top_p = None;
    c.top_k = None;
    c.max_output_tokens = None;
    let mut headers = codex_headers();
    if let Some(own) = &config.extra_headers {
        headers.extend(own.clone());
    }
    c.extra_headers = Some(headers);
    c.litellm_extra_body
        .entry("store")
        .or_insert(Value::Bool(false));
    c
}

/// Whether `config` signs in with a subscription.
pub fn is_subscription(config: &LlmConfig) -> bool {
    config.auth_type == "subscription"
}

/// The vendor of a subscription configuration; only `openai` exists.
pub fn check_vendor(config: &LlmConfig) -> Result<(), LlmError> {
    match config.extra.get("subscription_vendor") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(v)) if v == VENDOR => Ok(()),
        Some(other) => Err(LlmError::Config(format!(
            "subscription_vendor: {other} is not supported; only \"openai\" is"
        ))),
    }
}

/// A Responses body made fit for the Codex backend: no `include`,
/// `reasoning`, `prompt_cache_retention`, temperature or output limit;
/// the system prompt moved from `instructions` into the first user
/// message (behind `Context (system prompt):`), fixed short
/// instructions; message items without their `type`; earlier reasoning
/// items dropped.
pub fn adapt_body(body: &mut Value) {
    let Some(o) = body.as_object_mut() else {
        return;
    };
    for k in [
        "include",
        "reasoning",
        "prompt_cache_retention",
        "temperature",
        "top_p",
        "max_output_tokens",
    ] {
        o.remove(k);
    }
    let system = o
        .remove("instructions")
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.trim().is_empty());
    o.insert("instructions".into(), json!(DEFAULT_INSTRUCTIONS));
    let mut input: Vec<Value> = match o.remove("input") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    input.retain(|i| i.get("type").and_then(Value::as_str) != Some("reasoning"));
    if let Some(system) = system {
        let prefix = json!({"type": "input_text",
            "text": format!("Context (system prompt):\n{system}\n\n")});
        let user = input.iter_mut().find(|i| {
            i.get("role").and_then(Value::as_str) == Some("user")
                && i.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == "message")
        });
        match user {
            Some(item) => {
                let content = match item.get_mut("content").map(Value::take) {
                    Some(Value::Array(parts)) => parts,
                    Some(Value::String(s)) if !s.is_empty() => {
                        vec![json!({"type": "input_text", "text": s})]
                    }
                    _ => Vec::new(),
                };
                let mut parts = vec![prefix];
                parts.extend(content);
                item["content"] = Value::Array(parts);
            }
            None => input.insert(0, json!({"role": "user", "content": [prefix]})),
        }
    }
    for item in &mut input {
        if item.get("type").and_then(Value::as_str) == Some("message")
            && let Some(m) = item.as_object_mut()
        {
            let role = m.remove("role").unwrap_or(Value::Null);
            let content = m
                .remove("content")
                .filter(|c| !c.is_null())
                .unwrap_or(json!([]));
            *item = json!({"role": role, "content": content});
        }
    }
    o.insert("input".into(), Value::Array(input));
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
