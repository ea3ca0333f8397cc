//! [`OAuthState`]: the reference's `auth.state` of an OAuth server —
//! `{"tokens": {"access_token", "token_type", "expires_in", "scope",
//! "refresh_token"}, "client_info": {"client_id", "client_secret",
//! "redirect_uris", ...}, "token_expires_at": <epoch seconds>}` — and
//! [`OAuthStateStore`], where connections read and write it, keyed by the
//! server's URL. `rmcp` sees it through [`StateCredentials`], its
//! `CredentialStore`.

use async_trait::async_trait;
use parking_lot::Mutex;
use rmcp::transport::auth::{AuthError, CredentialStore, OAuthTokenResponse, StoredCredentials};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The OAuth state of one server, in the reference's JSON shape (fields
/// this crate does not use are kept as written). Secrets are plain text
/// here; encrypting them at rest is the store's job.
#[derive(Clone, Default, PartialEq)]
pub struct OAuthState(Map<String, Value>);

impl std::fmt::Debug for OAuthState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthState")
            .field("client_id", &self.client_id())
            .field("has_tokens", &self.access_token().is_some())
            .finish()
    }
}

fn obj<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.get(k).and_then(Value::as_object)
}

impl OAuthState {
    /// The state from its JSON object.
    pub fn from_json(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// The JSON object (`null` members dropped, as the reference stores it).
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(Value::is_null)
    }

    /// The current access token.
    pub fn access_token(&self) -> Option<&str> {
        obj(&self.0, "tokens")?.get("access_token")?.as_str()
    }

    /// The registered (or configured) client's id.
    pub fn client_id(&self) -> Option<&str> {
        obj(&self.0, "client_info")?.get("client_id")?.as_str()
    }

    /// The registered client's secret, if it has one.
    pub fn client_secret(&self) -> Option<&str> {
        obj(&self.0, "client_info")?
            .get("client_secret")?
            .as_str()
            .filter(|s| !s.is_empty())
    }

    /// The redirect URI the client registered first.
    pub fn redirect_uri(&self) -> Option<&str> {
        obj(&self.0, "client_info")?
            .get("redirect_uris")?
            .as_array()?
            .first()?
            .as_str()
    }

    /// Records a client registration (replacing a previous one and, when
    /// the client changes, its tokens).
    pub fn set_client(&mut self, client_id: &str, secret: Option<&str>, redirect_uri: &str) {
        if self.client_id() != Some(client_id) {
            self.0.remove("tokens");
            self.0.remove("token_expires_at");
        }
        let mut info = Map::new();
        info.insert("client_id".into(), json!(client_id));
        if let Some(s) = secret {
            info.insert("client_secret".into(), json!(s));
        }
        info.insert("redirect_uris".into(), json!([redirect_uri]));
        info.insert(
            "token_endpoint_auth_method".into(),
            json!(if secret.is_some() {
                "client_secret_basic"
            } else {
                "none"
            }),
        );
        info.insert(
            "grant_types".into(),
            json!(["authorization_code", "refresh_token"]),
        );
        info.insert("response_types".into(), json!(["code"]));
        self.0.insert("client_info".into(), Value::Object(info));
    }

    /// The state as `rmcp` credentials (`None` without a client id). A
    /// stored `token_expires_at` becomes the time the tokens were received.
    pub(crate) fn to_credentials(
        &self,
        fallback_client_id: Option<&str>,
    ) -> Option<StoredCredentials> {
        let client_id = self.client_id().or(fallback_client_id)?.to_string();
        let tokens =
            obj(&self.0, "tokens").filter(|t| t.get("access_token").is_some_and(Value::is_string));
        let mut response = None;
        let mut scopes = Vec::new();
        let mut received_at = None;
        if let Some(t) = tokens {
            let mut t = t.clone();
            if !t.get("token_type").is_some_and(Value::is_string) {
                t.insert("token_type".into(), json!("Bearer"));
            }
            t.retain(|_, v| !v.is_null());
            response = serde_json::from_value::<OAuthTokenResponse>(Value::Object(t.clone())).ok();
            scopes = t
                .get("scope")
                .and_then(Value::as_str)
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default();
            let expires_at = self.0.get("token_expires_at").and_then(Value::as_f64);
            let expires_in = t.get("expires_in").and_then(Value::as_f64);
            if let (Some(at), Some(ein)) = (expires_at, expires_in) {
                received_at = Some((at - ein).max(0.0) as u64);
            }
        }
        Some(StoredCredentials::new(
            client_id,
            response,
            scopes,
            received_at,
        ))
    }

    /// Takes `rmcp`'s credentials in: the tokens (with `token_type`
    /// `Bearer`, as the reference writes it) and their absolute expiry.
    pub(crate) fn apply_credentials(&mut self, creds: &StoredCredentials) {
        if self.client_id() != Some(creds.client_id.as_str()) {
            let mut info = Map::new();
            info.insert("client_id".into(), json!(creds.client_id));
            self.0.insert("client_info".into(), Value::Object(info));
        }
        match &creds.token_response {
            Some(resp) => {
                let mut t = match serde_json::to_value(resp) {
                    Ok(Value::Object(t)) => t,
                    _ => Map::new(),
                };
                t.insert("token_type".into(), json!("Bearer"));
                let expires_in = t.get("expires_in").and_then(Value::as_f64);
                self.0.insert("tokens".into(), Value::Object(t));
                match (expires_in, creds.token_received_at) {
                    (Some(ein), Some(at)) => {
                        self.0
                            .insert("token_expires_at".into(), json!(at as f64 + ein));
                    }
                    _ => {
                        self.0.remove("token_expires_at");
                    }
                }
            }
            None => {
                self.0.remove("tokens");
                self.0.remove("token_expires_at");
            }
        }
    }
}

/// Where the OAuth states of servers live, keyed by server URL (without a
/// trailing `/`). Implementations persist them (the agent server: its
/// settings, secrets encrypted) or keep them in memory.
#[async_trait]
pub trait OAuthStateStore: Send + Sync + std::fmt::Debug {
    /// The state stored for `server_url`.
    async fn load(&self, server_url: &str) -> Option<OAuthState>;
    /// Replaces the state of `server_url`.
    async fn save(&self, server_url: &str, state: OAuthState);
}

/// The normal form of a server URL as a store key.
pub(crate) fn key(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

/// States in memory (a session without a persistent store; tests).
#[derive(Debug, Default)]
pub struct MemoryStates(Mutex<HashMap<String, OAuthState>>);

impl MemoryStates {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The state of `server_url`, now.
    pub fn get(&self, server_url: &str) -> Option<OAuthState> {
        self.0.lock().get(&key(server_url)).cloned()
    }
}

#[async_trait]
impl OAuthStateStore for MemoryStates {
    async fn load(&self, server_url: &str) -> Option<OAuthState> {
        self.get(server_url)
    }

    async fn save(&self, server_url: &str, state: OAuthState) {
        self.0.lock().insert(key(server_url), state);
    }
}

/// `rmcp`'s credential store over an [`OAuthStateStore`]: the stored state
/// of the server's URL, else the configuration's own `auth.state`.
pub(crate) struct StateCredentials {
    pub(crate) url: String,
    pub(crate) seed: Option<OAuthState>,
    pub(crate) client_id: Option<String>,
    pub(crate) store: Arc<dyn OAuthStateStore>,
}

impl StateCredentials {
    async fn current(&self) -> OAuthState {
        match self.store.load(&key(&self.url)).await {
            Some(s) => s,
            None => self.seed.clone().unwrap_or_default(),
        }
    }
}

#[async_trait]
impl CredentialStore for StateCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .current()
            .await
            .to_credentials(self.client_id.as_deref()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut state = self.current().await;
        state.apply_credentials(&credentials);
        self.store.save(&key(&self.url), state).await;
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut state = self.current().await;
        state.0.remove("tokens");
        state.0.remove("token_expires_at");
        self.store.save(&key(&self.url), state).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_state_round_trips_through_rmcp_credentials() {
        let mut state = OAuthState::from_json(
            json!({
                "tokens": {"access_token": "a1", "token_type": "Bearer", "expires_in": 60,
                           "refresh_token": "r1", "scope": "mcp x"},
                "client_info": {"client_id": "c", "redirect_uris": ["http://localhost:1/callback"]},
                "token_expires_at": 1000.0
            })
            .as_object()
            .cloned()
            .unwrap(),
        );
        let creds = state.to_credentials(None).unwrap();
        assert_eq!(creds.client_id, "c");
        assert_eq!(creds.token_received_at, Some(940));
        assert_eq!(creds.granted_scopes, vec!["mcp", "x"]);
        state.apply_credentials(&creds);
        let v = state.to_json();
        assert_eq!(v["tokens"]["access_token"], "a1");
        assert_eq!(v["tokens"]["refresh_token"], "r1");
        assert_eq!(v["tokens"]["token_type"], "Bearer");
        assert_eq!(v["token_expires_at"], 1000.0);
        assert_eq!(state.redirect_uri(), Some("http://localhost:1/callback"));
        // Another client: its tokens go.
        state.set_client("d", Some("s"), "http://localhost:2/callback");
        assert_eq!(state.access_token(), None);
        assert_eq!(state.client_secret(), Some("s"));
        assert!(OAuthState::default().to_credentials(None).is_none());
    }
}
