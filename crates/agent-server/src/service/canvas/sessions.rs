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
use tokio_util::sync::CancellationToken;

/// Session lifetime (the reference's five minutes).
pub const SESSION_TTL: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone)]
struct Session {
    extension: String,
    endpoint: (String, u16),
    expires_at: f64,
    /// Cancelled when the session ends (bridged sockets close).
    revoked: CancellationToken,
}

/// A live session's hold on a bridged socket: cancelled when the session
/// is revoked; `ttl` is the time it has left.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Cancelled on revocation.
    pub revoked: CancellationToken,
    /// Time left before expiry.
    pub ttl: Duration,
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
        map.retain(|_, s| {
            let live = s.expires_at > t;
            if !live {
                s.revoked.cancel();
            }
            live
        });
    }

    /// A new session for `extension` at `endpoint`: the token and its
    /// expiry (seconds since the epoch).
    pub fn create(
        &self,
        extension: &str,
        endpoint: (String, u16),
    ) -> Result<(String, f64), getrandom::Error> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw)?;
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
                revoked: CancellationToken::new(),
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
        self.grant(token, extension, endpoint).is_some()
    }

    /// [`AppSessions::authorize`] with the session's revocation token and
    /// remaining lifetime (for a bridged socket).
    pub fn grant(
        &self,
        token: Option<&str>,
        extension: &str,
        endpoint: &(String, u16),
    ) -> Option<Grant> {
        let token = token.filter(|t| !t.is_empty())?;
        let mut map = self.sessions.lock();
        Self::prune(&mut map);
        map.get(&digest(token))
            .filter(|s| s.extension == extension && &s.endpoint == endpoint)
            .map(|s| Grant {
                revoked: s.revoked.clone(),
                ttl: Duration::from_secs_f64((s.expires_at - now()).max(0.0)),
            })
    }

    /// Revokes one token.
    pub fn revoke_token(&self, token: Option<&str>) {
        if let Some(t) = token.filter(|t| !t.is_empty())
            && let Some(s) = self.sessions.lock().remove(&digest(t))
        {
            s.revoked.cancel();
        }
    }

    /// Revokes every session of `extension`.
    pub fn revoke_app(&self, extension: &str) {
        self.sessions.lock().retain(|_, s| {
            let keep = s.extension != extension;
            if !keep {
                s.revoked.cancel();
            }
            keep
        });
    }

    /// Revokes everything (shutdown).
    pub fn clear(&self) {
        for (_, s) in self.sessions.lock().drain() {
            s.revoked.cancel();
        }
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
        let grant = s.grant(Some(&t), "app", &ep).unwrap();
        assert!(grant.ttl <= SESSION_TTL && !grant.revoked.is_cancelled());
        s.revoke_app("app");
        assert!(!s.authorize(Some(&t), "app", &ep));
        assert!(
            grant.revoked.is_cancelled(),
            "a bridged socket ends with its session"
        );
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
