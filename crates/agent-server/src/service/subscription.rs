//! ChatGPT (OpenAI subscription) sign-in by device code, as the reference's
//! `/api/llm/subscription/openai/*`: `start` asks the issuer for a user code
//! and hands the client an opaque polling token (the issuer's device id stays
//! on the server); `poll` asks the issuer once, and on success exchanges the
//! authorization code for tokens and stores them; `status` refreshes expired
//! tokens; `logout` forgets them and invalidates logins in flight (an epoch).
//!
//! The issuer (`https://auth.openai.com`) is configurable
//! (`OH_OPENAI_AUTH_ISSUER`). Credentials live where the reference keeps
//! them, `<persistence_dir>/auth/openai_oauth.json` (`type`, `vendor`,
//! `access_token`, `refresh_token`, `expires_at` in ms, mode 0600), with the
//! two tokens Fernet-encrypted by the server's secret key like every other
//! stored secret (in clear, with a warning, when no key is configured).

use base64::Engine;
use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// The reference's issuer.
pub const DEFAULT_ISSUER: &str = "https://auth.openai.com";
/// The Codex CLI's public OAuth client id (the reference's).
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// How long a started device login may be polled.
pub const DEVICE_CODE_TIMEOUT_MS: i64 = 900 * 1000;
/// Models reachable through the subscription.
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
const VENDOR: &str = "openai";
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed exchange with the issuer (answered as a bad gateway).
#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    /// The issuer refused or could not be reached.
    #[error("{0}")]
    Upstream(String),
    /// The polling token is unknown or expired.
    #[error("Subscription device login not found or expired")]
    UnknownLogin,
    /// The credentials file could not be written.
    #[error("credentials file I/O failed: {0}")]
    Io(String),
}

/// The safe connection state (never the tokens).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscriptionStatus {
    /// Always `openai`.
    pub vendor: &'static str,
    /// Usable credentials are stored.
    pub connected: bool,
    /// Not known to this server (always null, as the reference).
    pub account_email: Option<String>,
    /// When the access token expires (ms since the epoch).
    pub expires_at: Option<i64>,
}

impl SubscriptionStatus {
    fn disconnected() -> Self {
        Self {
            vendor: VENDOR,
            connected: false,
            account_email: None,
            expires_at: None,
        }
    }

    fn connected(expires_at: i64) -> Self {
        Self {
            vendor: VENDOR,
            connected: true,
            account_email: None,
            expires_at: Some(expires_at),
        }
    }
}

/// What the client shows the user after `start`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceStart {
    /// Opaque server-side polling token.
    pub device_code: String,
    /// Code the user types.
    pub user_code: String,
    /// Where the user types it.
    pub verification_uri: String,
    /// Never set (the reference leaves it null).
    pub verification_uri_complete: Option<String>,
    /// When polling stops being possible (ms since the epoch).
    pub expires_at: i64,
    /// Seconds between polls.
    pub interval_seconds: i64,
}

/// Stored OAuth credentials.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    /// Access token.
    pub access_token: String,
    /// Refresh token.
    pub refresh_token: String,
    /// Expiry (ms since the epoch).
    pub expires_at: i64,
}

impl Credentials {
    fn expired(&self) -> bool {
        self.expires_at < now_ms() + 60_000
    }
}

#[derive(Debug, Clone)]
struct DeviceCode {
    user_code: String,
    device_auth_id: String,
}

#[derive(Debug, Clone)]
struct Pending {
    device: DeviceCode,
    expires_at: i64,
    epoch: u64,
}

#[derive(Debug, Default)]
struct Logins {
    pending: HashMap<String, Pending>,
    in_flight: HashSet<String>,
    epoch: u64,
}

impl Logins {
    fn drop_expired(&mut self) {
        let now = now_ms();
        self.pending.retain(|_, p| p.expires_at > now);
    }
}

/// The subscription sign-in service.
#[derive(Clone)]
pub struct OpenAiSubscription {
    issuer: String,
    dir: PathBuf,
    cipher: Option<Cipher>,
    /// The client, or why it could not be built (answered on use).
    http: Result<reqwest::Client, String>,
    logins: Arc<Mutex<Logins>>,
    file_lock: Arc<Mutex<()>>,
}

impl std::fmt::Debug for OpenAiSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSubscription")
            .field("issuer", &self.issuer)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

fn opaque_token() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn upstream(message: impl Into<String>) -> SubscriptionError {
    SubscriptionError::Upstream(message.into())
}

impl OpenAiSubscription {
    /// Talks to `issuer`; credentials under `persistence_dir/auth`, sealed by `cipher`.
    pub fn new(issuer: &str, persistence_dir: PathBuf, cipher: Option<Cipher>) -> Self {
        Self {
            issuer: issuer.trim_end_matches('/').to_string(),
            dir: persistence_dir.join("auth"),
            cipher,
            http: openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
                HTTP_TIMEOUT,
            ))
            .map_err(|e| e.to_string()),
            logins: Arc::new(Mutex::new(Logins::default())),
            file_lock: Arc::new(Mutex::new(())),
        }
    }

    fn http(&self) -> Result<&reqwest::Client, SubscriptionError> {
        self.http
            .as_ref()
            .map_err(|e| SubscriptionError::Upstream(e.clone()))
    }

    /// The credentials file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(format!("{VENDOR}_oauth.json"))
    }

    /// The subscription's models, sorted.
    pub fn models() -> Vec<String> {
        let mut models: Vec<String> = CODEX_MODELS.iter().map(|m| m.to_string()).collect();
        models.sort();
        models
    }

    /// Starts a device login.
    pub async fn start(&self) -> Result<DeviceStart, SubscriptionError> {
        let device = self.request_device_code().await?;
        let (user_code, interval) = (device.0.user_code.clone(), device.1);
        let token = opaque_token();
        let expires_at = now_ms() + DEVICE_CODE_TIMEOUT_MS;
        let mut logins = self.logins.lock().await;
        logins.drop_expired();
        let epoch = logins.epoch;
        logins.pending.insert(
            token.clone(),
            Pending {
                device: device.0,
                expires_at,
                epoch,
            },
        );
        Ok(DeviceStart {
            device_code: token,
            user_code,
            verification_uri: format!("{}/codex/device", self.issuer),
            verification_uri_complete: None,
            expires_at,
            interval_seconds: interval,
        })
    }

    /// Polls a started login once.
    pub async fn poll(&self, token: &str) -> Result<SubscriptionStatus, SubscriptionError> {
        let pending = {
            let mut logins = self.logins.lock().await;
            logins.drop_expired();
            match logins.pending.remove(token) {
                Some(p) => {
                    logins.in_flight.insert(token.to_string());
                    p
                }
                None if logins.in_flight.contains(token) => {
                    return Ok(SubscriptionStatus::disconnected());
                }
                None => return Err(SubscriptionError::UnknownLogin),
            }
        };
        let result = self.poll_once(&pending.device).await;
        let mut logins = self.logins.lock().await;
        logins.in_flight.remove(token);
        let credentials = match result {
            Ok(Some(c)) => c,
            other => {
                // Still pending, or the poll failed: the token stays usable.
                if pending.epoch == logins.epoch {
                    logins.pending.insert(token.to_string(), pending);
                }
                return other.map(|_| SubscriptionStatus::disconnected());
            }
        };
        if pending.epoch != logins.epoch {
            return Ok(SubscriptionStatus::disconnected());
        }
        self.save(&credentials).await?;
        Ok(SubscriptionStatus::connected(credentials.expires_at))
    }

    /// The connection state, refreshing expired tokens first.
    pub async fn status(&self) -> SubscriptionStatus {
        let Some(creds) = self.load().await else {
            return SubscriptionStatus::disconnected();
        };
        if !creds.expired() {
            return SubscriptionStatus::connected(creds.expires_at);
        }
        match self.refresh(&creds).await {
            Ok(updated) => SubscriptionStatus::connected(updated.expires_at),
            Err(e) => {
                tracing::info!(error = %e, "subscription token refresh failed");
                SubscriptionStatus::disconnected()
            }
        }
    }

    /// Forgets the credentials and every login in progress.
    pub async fn logout(&self) -> Result<SubscriptionStatus, SubscriptionError> {
        let mut logins = self.logins.lock().await;
        logins.epoch += 1;
        logins.pending.clear();
        let _g = self.file_lock.lock().await;
        match tokio::fs::remove_file(self.path()).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(SubscriptionError::Io(e.to_string())),
        }
        Ok(SubscriptionStatus::disconnected())
    }

    async fn request_device_code(&self) -> Result<(DeviceCode, i64), SubscriptionError> {
        let response = self
            .http()?
            .post(format!("{}/api/accounts/deviceauth/usercode", self.issuer))
            .json(&json!({"client_id": CLIENT_ID}))
            .send()
            .await
            .map_err(|e| upstream(format!("Device code request failed: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            if status.as_u16() == 404 {
                return Err(upstream(
                    "Device code login is not enabled for this OpenAI server. Use browser login instead.",
                ));
            }
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
        let user_code = data
            .get("user_code")
            .filter(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))
            .or_else(|| data.get("usercode"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(invalid)?;
        let device_auth_id = match data.get("device_auth_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(invalid()),
        };
        Ok((
            DeviceCode {
                user_code: user_code.to_string(),
                device_auth_id,
            },
            interval.max(1),
        ))
    }

    async fn poll_once(
        &self,
        device: &DeviceCode,
    ) -> Result<Option<Credentials>, SubscriptionError> {
        let response = self
            .http()?
            .post(format!("{}/api/accounts/deviceauth/token", self.issuer))
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
        let code = data
            .get("authorization_code")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let verifier = data
            .get("code_verifier")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let redirect = format!("{}/deviceauth/callback", self.issuer);
        let tokens = self
            .token_request(vec![
                ("grant_type", "authorization_code".to_string()),
                ("code", code.to_string()),
                ("redirect_uri", redirect),
                ("client_id", CLIENT_ID.to_string()),
                ("code_verifier", verifier.to_string()),
            ])
            .await
            .map_err(|s| upstream(format!("Token exchange failed: {s}")))?;
        let access = tokens.get("access_token").and_then(Value::as_str);
        let refresh = tokens.get("refresh_token").and_then(Value::as_str);
        let (Some(access), Some(refresh)) = (access, refresh) else {
            return Err(upstream("Invalid token response from OpenAI"));
        };
        Ok(Some(Credentials {
            access_token: access.to_string(),
            refresh_token: refresh.to_string(),
            expires_at: now_ms() + expires_in(&tokens) * 1000,
        }))
    }

    /// A form POST to `/oauth/token`; the JSON answer, or the status as text.
    async fn token_request(&self, form: Vec<(&'static str, String)>) -> Result<Value, String> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = self
            .http
            .as_ref()
            .map_err(Clone::clone)?
            .post(format!("{}/oauth/token", self.issuer))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(status.as_u16().to_string());
        }
        response.json().await.map_err(|e| e.to_string())
    }

    async fn refresh(&self, creds: &Credentials) -> Result<Credentials, SubscriptionError> {
        let tokens = self
            .token_request(vec![
                ("grant_type", "refresh_token".to_string()),
                ("refresh_token", creds.refresh_token.clone()),
                ("client_id", CLIENT_ID.to_string()),
            ])
            .await
            .map_err(|s| upstream(format!("Token refresh failed: {s}")))?;
        let access = tokens
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| upstream("Invalid token response from OpenAI"))?;
        let updated = Credentials {
            access_token: access.to_string(),
            refresh_token: tokens
                .get("refresh_token")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(&creds.refresh_token)
                .to_string(),
            expires_at: now_ms() + expires_in(&tokens) * 1000,
        };
        self.save(&updated).await?;
        Ok(updated)
    }

    fn seal(&self, value: &str) -> String {
        match &self.cipher {
            Some(c) => c.encrypt(value),
            None => {
                tracing::warn!(
                    "saving subscription tokens in PLAINTEXT (no secret key configured); set OH_SECRET_KEY"
                );
                value.to_string()
            }
        }
    }

    fn reveal(&self, stored: &str) -> Option<String> {
        if looks_encrypted(stored) {
            self.cipher.as_ref().and_then(|c| c.decrypt(stored))
        } else {
            Some(stored.to_string())
        }
    }

    async fn save(&self, creds: &Credentials) -> Result<(), SubscriptionError> {
        let doc = json!({
            "type": "oauth",
            "vendor": VENDOR,
            "access_token": self.seal(&creds.access_token),
            "refresh_token": self.seal(&creds.refresh_token),
            "expires_at": creds.expires_at,
        });
        let _g = self.file_lock.lock().await;
        let (dir, path) = (self.dir.clone(), self.path());
        tokio::task::spawn_blocking(move || {
            create_private_dir(&dir).map_err(|e| SubscriptionError::Io(e.to_string()))?;
            let bytes = serde_json::to_vec_pretty(&doc)
                .map_err(|e| SubscriptionError::Io(e.to_string()))?;
            write_atomic(&path, &bytes).map_err(|e| SubscriptionError::Io(e.to_string()))
        })
        .await
        .map_err(|e| SubscriptionError::Io(e.to_string()))?
    }

    /// The stored credentials; a file that cannot be read as credentials
    /// (or decrypted with this server's keys) is removed, as the reference
    /// drops an invalid file.
    pub async fn load(&self) -> Option<Credentials> {
        let _g = self.file_lock.lock().await;
        let path = self.path();
        let bytes = tokio::fs::read(&path).await.ok()?;
        let parsed = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|doc| {
                let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
                Some(Credentials {
                    access_token: self.reveal(&text("access_token")?)?,
                    refresh_token: self.reveal(&text("refresh_token")?)?,
                    expires_at: doc.get("expires_at").and_then(Value::as_i64)?,
                })
            });
        if parsed.is_none() {
            tracing::warn!(path = %path.display(), "invalid subscription credentials file removed");
            let _ = tokio::fs::remove_file(&path).await;
        }
        parsed
    }
}

fn expires_in(tokens: &Value) -> i64 {
    tokens
        .get("expires_in")
        .and_then(Value::as_i64)
        .unwrap_or(3600)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_are_opaque_and_expiry_has_a_margin() {
        let (a, b) = (opaque_token(), opaque_token());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        let creds = |expires_at| Credentials {
            access_token: "a".into(),
            refresh_token: "r".into(),
            expires_at,
        };
        assert!(creds(now_ms() + 30_000).expired());
        assert!(!creds(now_ms() + 120_000).expired());
        let models = OpenAiSubscription::models();
        let mut sorted = models.clone();
        sorted.sort();
        assert_eq!(models, sorted);
        assert_eq!(expires_in(&json!({"expires_in": 10})), 10);
        assert_eq!(expires_in(&json!({})), 3600);
    }
}
