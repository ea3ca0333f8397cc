//! Short-lived browser sessions for app backends: a random token handed
//! out once (as a cookie by the HTTP layer), kept only as its SHA-256,
//! bound to one extension and the backend endpoint it was issued for,
//! expiring after a TTL, revoked per token, per app or all at once.

use base64::Engine;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Session lifetime (the reference's five minutes).
pub const SESSION_TTL: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone)]
struct Session {
    extension: String,
    endpoint: (String, u16),
    expires_at: f64,
}

/// The live sessions.
#[derive(Debug, Clone, Default)]
pub struct AppSessions {
    sessions: Arc<Mutex<HashMap<[u8; 32], Session>>>,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl AppSessions {
    fn prune(map: &mut HashMap<[u8; 32], Session>) {
        let t = now();
        map.retain(|_, s| s.expires_at > t);
    }

    /// A new session for `extension` at `endpoint`: the token and its
    /// expiry (seconds since the epoch).
    pub fn create(
        &self,
        extension: &str,
        endpoint: (String, u16),
    ) -> Result<(String, f64), String> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(|e| e.to_string())?;
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
        let expires_at = now() + SESSION_TTL.as_secs_f64();
        let mut map = self.sessions.lock();
        Self::prune(&mut map);
        map.insert(
            digest(&token),
            Session {
                extension: extension.to_string(),
                endpoint,
                expires_at,
            },
        );
        Ok((token, expires_at))
    }

    /// Whether `token` is a live session of `extension` at `endpoint`.
    pub fn authorize(
        &self,
        token: Option<&str>,
        extension: &str,
        endpoint: &(String, u16),
    ) -> bool {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return false;
        };
        let mut map = self.sessions.lock();
        Self::prune(&mut map);
        map.get(&digest(token))
            .is_some_and(|s| s.extension == extension && &s.endpoint == endpoint)
    }

    /// Revokes one token.
    pub fn revoke_token(&self, token: Option<&str>) {
        if let Some(t) = token.filter(|t| !t.is_empty()) {
            self.sessions.lock().remove(&digest(t));
        }
    }

    /// Revokes every session of `extension`.
    pub fn revoke_app(&self, extension: &str) {
        self.sessions.lock().retain(|_, s| s.extension != extension);
    }

    /// Revokes everything (shutdown).
    pub fn clear(&self) {
        self.sessions.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_bound_to_app_and_endpoint_and_revocable() {
        let s = AppSessions::default();
        let ep = ("127.0.0.1".to_string(), 4000);
        let (t, exp) = s.create("app", ep.clone()).unwrap();
        assert!(exp > now());
        assert!(s.authorize(Some(&t), "app", &ep));
        assert!(!s.authorize(Some(&t), "other", &ep));
        assert!(!s.authorize(Some(&t), "app", &("127.0.0.1".to_string(), 4001)));
        assert!(!s.authorize(Some("forged"), "app", &ep));
        assert!(!s.authorize(None, "app", &ep));
        s.revoke_app("app");
        assert!(!s.authorize(Some(&t), "app", &ep));
        let (t2, _) = s.create("app", ep.clone()).unwrap();
        s.revoke_token(Some(&t2));
        assert!(!s.authorize(Some(&t2), "app", &ep));
    }

    #[test]
    fn expired_sessions_are_refused() {
        let s = AppSessions::default();
        let ep = ("127.0.0.1".to_string(), 1);
        let (t, _) = s.create("app", ep.clone()).unwrap();
        s.sessions
            .lock()
            .values_mut()
            .for_each(|x| x.expires_at = now() - 1.0);
        assert!(!s.authorize(Some(&t), "app", &ep));
    }
}
