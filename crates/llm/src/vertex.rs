//! Vertex AI (`vertex_ai/<model>`): Gemini models through
//! `generateContent` and Anthropic models through `rawPredict` (the
//! Messages body with `anthropic_version: vertex-2023-10-16`), both under
//! `projects/<vertex_project>/locations/<vertex_location>/publishers/...`.
//!
//! Credentials, looked for as Google's application-default credentials
//! are: `vertex_credentials` (a path or the JSON itself), else the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's
//! `application_default_credentials.json` (in `$CLOUDSDK_CONFIG`, else
//! `~/.config/gcloud`). A service-account file signs a JWT with its key
//! (RS256) and exchanges it at its `token_uri`; an `authorized_user` file
//! (what `gcloud auth application-default login` writes) exchanges its
//! refresh token there; either access token is kept until shortly before
//! it expires. Other kinds (workload identity federation, impersonation)
//! and the GCE metadata server are refused by name.

use crate::error::LlmError;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use openhands_wire::LlmConfig;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub use crate::provider_env::EnvGet;
use crate::provider_env::{env_value, extra_setting as setting};

/// Location used when nothing names one (LiteLLM's default).
pub const DEFAULT_LOCATION: &str = "us-central1";

/// The body field Anthropic models on Vertex need.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The OAuth scope of Vertex AI calls.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Time allowed for the token exchange.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A service account's key.
#[derive(Clone)]
pub struct ServiceAccount {
    /// `client_email`.
    pub client_email: String,
    /// `private_key` as PKCS#8 DER.
    key_der: Vec<u8>,
    /// `token_uri`.
    pub token_uri: String,
    /// `project_id`.
    pub project_id: Option<String>,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

fn cfg_err(field: &str, msg: impl std::fmt::Display) -> LlmError {
    LlmError::Config(format!("{field}: {msg}"))
}

impl ServiceAccount {
    /// Parses a service-account key file's JSON; `field` names the setting
    /// it came from in errors.
    pub fn from_json(text: &str, field: &str) -> Result<Self, LlmError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| cfg_err(field, format!("not a JSON credentials file: {e}")))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "service_account" {
            return Err(cfg_err(
                field,
                format!(
                    "credentials of type `{kind}` are not supported; use a service-account key file"
                ),
            ));
        }
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| cfg_err(field, format!("the credentials file has no `{k}`")))
        };
        let pem = s("private_key")?;
        let b64: String = pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::trim)
            .collect();
        let key_der = STANDARD
            .decode(b64)
            .map_err(|e| cfg_err(field, format!("private_key is not PEM: {e}")))?;
        ring::signature::RsaKeyPair::from_pkcs8(&key_der)
            .map_err(|e| cfg_err(field, format!("private_key is not a PKCS#8 RSA key: {e}")))?;
        Ok(Self {
            client_email: s("client_email")?,
            key_der,
            token_uri: s("token_uri")
                .unwrap_or_else(|_| "https://oauth2.googleapis.com/token".into()),
            project_id: s("project_id").ok(),
        })
    }

    /// The signed JWT asking for an access token, issued at `now` (Unix
    /// seconds) for an hour.
    pub fn assertion(&self, now: u64) -> Result<String, LlmError> {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
        let claims = URL_SAFE_NO_PAD.encode(
            json!({
                "iss": self.client_email,
                "scope": SCOPE,
                "aud": self.token_uri,
                "iat": now,
                "exp": now + 3600,
            })
            .to_string(),
        );
        let input = format!("{header}.{claims}");
        let key = ring::signature::RsaKeyPair::from_pkcs8(&self.key_der)
            .map_err(|e| LlmError::Config(format!("vertex_credentials: bad key: {e}")))?;
        let mut sig = vec![0u8; key.public().modulus_len()];
        key.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            input.as_bytes(),
            &mut sig,
        )
        .map_err(|_| LlmError::Config("vertex_credentials: signing failed".into()))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

/// A Google user's application-default credentials (`authorized_user`).
#[derive(Clone)]
pub struct AuthorizedUser {
    /// `client_id`.
    pub client_id: String,
    client_secret: String,
    refresh_token: String,
    /// `token_uri` (Google's token endpoint by default).
    pub token_uri: String,
    /// `quota_project_id`.
    pub quota_project_id: Option<String>,
}

impl std::fmt::Debug for AuthorizedUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizedUser")
            .field("client_id", &self.client_id)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

/// Credentials that authorize Vertex AI calls.
#[derive(Debug, Clone)]
pub enum GoogleCredentials {
    /// A service account's key.
    ServiceAccount(ServiceAccount),
    /// A user's refresh token.
    AuthorizedUser(AuthorizedUser),
}

const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

impl GoogleCredentials {
    /// Parses a credentials file's JSON; `field` names where it came from.
    pub fn from_json(text: &str, field: &str) -> Result<Self, LlmError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| cfg_err(field, format!("not a JSON credentials file: {e}")))?;
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "service_account" => Ok(Self::ServiceAccount(ServiceAccount::from_json(
                text, field,
            )?)),
            "authorized_user" => {
                let s = |k: &str| {
                    v.get(k)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .ok_or_else(|| cfg_err(field, format!("the credentials file has no `{k}`")))
                };
                Ok(Self::AuthorizedUser(AuthorizedUser {
                    client_id: s("client_id")?,
                    client_secret: s("client_secret")?,
                    refresh_token: s("refresh_token")?,
                    token_uri: s("token_uri").unwrap_or_else(|_| GOOGLE_TOKEN_URI.into()),
                    quota_project_id: s("quota_project_id").ok(),
                }))
            }
            kind => Err(cfg_err(
                field,
                format!(
                    "credentials of type `{kind}` are not supported; use a service-account key \
                     file or gcloud's application-default (authorized_user) credentials"
                ),
            )),
        }
    }

    /// The project the file names (`project_id`, or a user's
    /// `quota_project_id`).
    pub fn project_id(&self) -> Option<String> {
        match self {
            Self::ServiceAccount(a) => a.project_id.clone(),
            Self::AuthorizedUser(u) => u.quota_project_id.clone(),
        }
    }

    /// The token endpoint.
    pub fn token_uri(&self) -> &str {
        match self {
            Self::ServiceAccount(a) => &a.token_uri,
            Self::AuthorizedUser(u) => &u.token_uri,
        }
    }

    /// The form posted to the token endpoint at `now` (Unix seconds).
    fn token_form(&self, now: u64) -> Result<String, LlmError> {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        match self {
            Self::ServiceAccount(a) => form
                .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                .append_pair("assertion", &a.assertion(now)?),
            Self::AuthorizedUser(u) => form
                .append_pair("grant_type", "refresh_token")
                .append_pair("client_id", &u.client_id)
                .append_pair("client_secret", &u.client_secret)
                .append_pair("refresh_token", &u.refresh_token),
        };
        Ok(form.finish())
    }
}

/// gcloud's application-default credentials file: in `$CLOUDSDK_CONFIG`,
/// else `~/.config/gcloud`.
pub fn gcloud_adc_file(env: EnvGet<'_>) -> Option<std::path::PathBuf> {
    let dir = env_value(env, "CLOUDSDK_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            env_value(env, "HOME").map(|h| std::path::Path::new(&h).join(".config/gcloud"))
        })?;
    Some(dir.join("application_default_credentials.json"))
}

/// Where and as whom a Vertex AI model is called.
#[derive(Debug, Clone)]
pub struct VertexTarget {
    /// The credentials whose tokens authorize calls.
    pub credentials: GoogleCredentials,
    /// `vertex_project`.
    pub project: String,
    /// `vertex_location`.
    pub location: String,
    /// The publisher (`google` or `anthropic`).
    pub publisher: &'static str,
    /// The model name.
    pub model: String,
    /// Scheme and host (or `base_url`), without trailing slash.
    pub api_base: String,
}

impl VertexTarget {
    /// The URL of a call (`generateContent`/`rawPredict`, or their streaming
    /// forms when `stream`).
    pub fn url(&self, stream: bool) -> String {
        let op = match (self.publisher, stream) {
            ("anthropic", false) => "rawPredict",
            ("anthropic", true) => "streamRawPredict",
            (_, false) => "generateContent",
            (_, true) => "streamGenerateContent?alt=sse",
        };
        format!(
            "{}/v1/projects/{}/locations/{}/publishers/{}/models/{}:{op}",
            self.api_base, self.project, self.location, self.publisher, self.model
        )
    }
}

/// Resolves a `vertex_ai/...` configuration (reads the credentials file).
pub fn resolve(config: &LlmConfig, env: EnvGet<'_>) -> Result<VertexTarget, LlmError> {
    let model = config.model_name().trim().to_string();
    if model.is_empty() {
        return Err(LlmError::Config("vertex_ai model name is empty".into()));
    }
    let publisher = if model.starts_with("claude") {
        "anthropic"
    } else if model.starts_with("gemini") {
        "google"
    } else {
        return Err(LlmError::Config(format!(
            "model `{}`: only Gemini and Anthropic (claude-...) models are supported on Vertex AI",
            config.model
        )));
    };
    let read = |path: &str, field: &str| {
        std::fs::read_to_string(path)
            .map_err(|e| cfg_err(field, format!("cannot read {path}: {e}")))
    };
    let (text, field) = match setting(config, "vertex_credentials") {
        Some(v) if v.starts_with('{') => (v.to_string(), "vertex_credentials"),
        Some(path) => (read(path, "vertex_credentials")?, "vertex_credentials"),
        None => match env_value(env, "GOOGLE_APPLICATION_CREDENTIALS") {
            Some(path) => (
                read(&path, "GOOGLE_APPLICATION_CREDENTIALS")?,
                "GOOGLE_APPLICATION_CREDENTIALS",
            ),
            None => match gcloud_adc_file(env).filter(|f| f.is_file()) {
                Some(file) => (
                    read(
                        &file.to_string_lossy(),
                        "application_default_credentials.json",
                    )?,
                    "application_default_credentials.json",
                ),
                None => {
                    return Err(LlmError::Config(
                        "no Vertex AI credentials: set vertex_credentials (a credentials file), \
                         GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default \
                         login`; credentials from the GCE metadata server are not supported"
                            .into(),
                    ));
                }
            },
        },
    };
    let credentials = GoogleCredentials::from_json(&text, field)?;
    let project = setting(config, "vertex_project")
        .map(str::to_string)
        .or_else(|| env_value(env, "VERTEXAI_PROJECT"))
        .or_else(|| credentials.project_id())
        .ok_or_else(|| {
            LlmError::Config(
                "vertex_project: no Google Cloud project (set vertex_project or VERTEXAI_PROJECT)"
                    .into(),
            )
        })?;
    let location = setting(config, "vertex_location")
        .map(str::to_string)
        .or_else(|| env_value(env, "VERTEXAI_LOCATION"))
        .or_else(|| env_value(env, "VERTEX_LOCATION"))
        .unwrap_or_else(|| DEFAULT_LOCATION.to_string());
    if !location
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(cfg_err(
            "vertex_location",
            format!("`{location}` is not a location"),
        ));
    }
    let api_base = match config.base_url.as_deref().map(str::trim) {
        Some(b) if !b.is_empty() => b.trim_end_matches('/').to_string(),
        _ if location == "global" => "https://aiplatform.googleapis.com".to_string(),
        _ => format!("https://{location}-aiplatform.googleapis.com"),
    };
    Ok(VertexTarget {
        credentials,
        project,
        location,
        publisher,
        model,
        api_base,
    })
}

/// Access tokens of one service account, fetched when needed and kept
/// until a minute before they expire.
#[derive(Debug, Default)]
pub struct TokenCache {
    current: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl TokenCache {
    /// A valid access token for `credentials`.
    pub async fn token(
        &self,
        client: &reqwest::Client,
        credentials: &GoogleCredentials,
    ) -> Result<String, LlmError> {
        let mut current = self.current.lock().await;
        if let Some((token, until)) = current.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let now = chrono::Utc::now().timestamp().max(0) as u64;
        let form = credentials.token_form(now)?;
        let token_uri = credentials.token_uri();
        let resp = client
            .post(token_uri)
            .timeout(TOKEN_TIMEOUT)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .map_err(|e| crate::classify::from_reqwest(&e))?;
        let status = resp.status();
        let body = resp
            .text()
            .await
            .map_err(|e| crate::classify::from_reqwest(&e))?;
        if !status.is_success() {
            return Err(LlmError::Authentication(format!(
                "Vertex AI token exchange at {token_uri} failed ({status}): {body}"
            )));
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| {
            LlmError::Authentication(format!("token endpoint answered non-JSON: {e}"))
        })?;
        let Some(token) = v.get("access_token").and_then(Value::as_str) else {
            return Err(LlmError::Authentication(
                "token endpoint answered without access_token".into(),
            ));
        };
        let lifetime = v.get("expires_in").and_then(Value::as_u64).unwrap_or(3600);
        let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60));
        *current = Some((token.to_string(), until));
        Ok(token.to_string())
    }
}
