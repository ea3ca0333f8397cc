//! ChatGPT (OpenAI subscription) sign-in by device code, as the reference's
//! `/api/llm/subscription/openai/*`: `start` asks the issuer for a user code
//! and hands the client an opaque polling token (the issuer's device id stays
//! on the server); `poll` asks the issuer once, and on success exchanges the
//! authorization code for tokens and stores them; `status` refreshes expired
//! tokens; `logout` forgets them and invalidates logins in flight (an epoch).
//!
//! The exchanges with the issuer and the credentials file are
//! `openhands_llm::subscription` (the SDK's `subscription_login` uses the
//! same code); this service adds the opaque polling tokens. The issuer
//! (`https://auth.openai.com`) and the Codex backend are configurable
//! (`OH_OPENAI_AUTH_ISSUER`, `OH_OPENAI_CODEX_BASE_URL`). Credentials live
//! where the reference keeps them, `<persistence_dir>/auth/openai_oauth.json`
//! (`type`, `vendor`, `access_token`, `refresh_token`, `expires_at` in ms,
//! mode 0600), with the two tokens Fernet-encrypted by the server's secret
//! key like every other stored secret (in clear, with a warning, when no
//! key is configured). The server installs this store as the process's
//! subscription source, so conversations whose LLM has
//! `auth_type: "subscription"` call with these tokens.

use base64::Engine;
use openhands_llm::subscription::openai::{
    AuthError, CODEX_MODELS, DeviceCode, Endpoints, OpenAiAuth, VENDOR,
};
use openhands_llm::subscription::store::{
    CredentialStore, OAuthCredentials as Credentials, TokenSeal, now_ms,
};
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex;

pub use openhands_llm::subscription::openai::{CODEX_API_BASE, DEFAULT_ISSUER};

/// How long a started device login may be polled.
pub const DEVICE_CODE_TIMEOUT_MS: i64 = 900 * 1000;

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

/// The server's tokens at rest: Fernet with its secret key; a value that
/// is not a Fernet token is taken as written in clear.
struct CipherSeal(Cipher);

impl TokenSeal for CipherSeal {
    fn seal(&self, value: &str) -> String {
        self.0.encrypt(value)
    }
    fn reveal(&self, stored: &str) -> Option<String> {
        if looks_encrypted(stored) {
            self.0.decrypt(stored)
        } else {
            Some(stored.to_string())
        }
    }
}

/// The subscription sign-in service.
#[derive(Clone)]
pub struct OpenAiSubscription {
    auth: OpenAiAuth,
    sealed: bool,
    logins: Arc<Mutex<Logins>>,
}

impl std::fmt::Debug for OpenAiSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSubscription")
            .field("endpoints", self.auth.endpoints())
            .finish_non_exhaustive()
    }
}

fn opaque_token() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn upstream(e: AuthError) -> SubscriptionError {
    match e {
        AuthError::Store(e) => SubscriptionError::Io(e.to_string()),
        other => SubscriptionError::Upstream(other.to_string()),
    }
}

impl OpenAiSubscription {
    /// Talks to `endpoints`; credentials under `persistence_dir/auth`,
    /// sealed by `cipher`.
    pub fn new(endpoints: Endpoints, persistence_dir: PathBuf, cipher: Option<Cipher>) -> Self {
        let sealed = cipher.is_some();
        let seal = cipher.map(|c| Arc::new(CipherSeal(c)) as Arc<dyn TokenSeal>);
        let store = CredentialStore::new(persistence_dir.join("auth"), seal);
        Self {
            auth: OpenAiAuth::new(endpoints, store),
            sealed,
            logins: Arc::new(Mutex::new(Logins::default())),
        }
    }

    /// The sign-in and store LLM calls use (installed as the process's
    /// subscription source).
    pub fn auth(&self) -> &OpenAiAuth {
        &self.auth
    }

    /// The credentials file.
    pub fn path(&self) -> PathBuf {
        self.auth.store().path(VENDOR)
    }

    /// The subscription's models, sorted.
    pub fn models() -> Vec<String> {
        let mut models: Vec<String> = CODEX_MODELS.iter().map(|m| m.to_string()).collect();
        models.sort();
        models
    }

    /// Starts a device login.
    pub async fn start(&self) -> Result<DeviceStart, SubscriptionError> {
        let device = self.auth.request_device_code().await.map_err(upstream)?;
        let (user_code, interval) = (device.user_code.clone(), device.interval.as_secs());
        let token = opaque_token();
        let expires_at = now_ms() + DEVICE_CODE_TIMEOUT_MS;
        let mut logins = self.logins.lock().await;
        logins.drop_expired();
        let epoch = logins.epoch;
        logins.pending.insert(
            token.clone(),
            Pending {
                device: device.clone(),
                expires_at,
                epoch,
            },
        );
        Ok(DeviceStart {
            device_code: token,
            user_code,
            verification_uri: device.verification_url,
            verification_uri_complete: None,
            expires_at,
            interval_seconds: i64::try_from(interval).unwrap_or(i64::MAX),
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
        let result = self
            .auth
            .poll_device_once(&pending.device)
            .await
            .map_err(upstream);
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

    async fn save(&self, credentials: &Credentials) -> Result<(), SubscriptionError> {
        if !self.sealed {
            tracing::warn!(
                "saving subscription tokens in PLAINTEXT (no secret key configured); set OH_SECRET_KEY"
            );
        }
        self.auth
            .store()
            .save(credentials)
            .await
            .map_err(|e| SubscriptionError::Io(e.to_string()))
    }

    /// The connection state, refreshing expired tokens first.
    pub async fn status(&self) -> SubscriptionStatus {
        let Some(creds) = self.load().await else {
            return SubscriptionStatus::disconnected();
        };
        if !creds.is_expired() {
            return SubscriptionStatus::connected(creds.expires_at);
        }
        match self.auth.refresh(&creds).await {
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
        self.auth.logout().await.map_err(upstream)?;
        Ok(SubscriptionStatus::disconnected())
    }

    /// The stored credentials; a file that cannot be read as credentials
    /// (or decrypted with this server's keys) is removed, as the reference
    /// drops an invalid file.
    pub async fn load(&self) -> Option<Credentials> {
        self.auth.credentials().await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_are_opaque_and_models_sorted() {
        let (a, b) = (opaque_token(), opaque_token());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        let models = OpenAiSubscription::models();
        let mut sorted = models.clone();
        sorted.sort();
        assert_eq!(models, sorted);
    }
}
