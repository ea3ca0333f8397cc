//! The accepted session keys of `/api/*` and the sockets.

use parking_lot::RwLock;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Header carrying the session key.
pub const SESSION_KEY_HEADER: &str = openhands_protocol::SESSION_API_KEY_HEADER;

/// The OpenAPI answer of a route that checks the session key itself: 401
/// "Missing or invalid <header> header" (used inline, as
/// `(status = 401, response = inline(MissingSessionKey))`).
pub struct MissingSessionKey;

impl<'s> utoipa::ToResponse<'s> for MissingSessionKey {
    fn response() -> (
        &'s str,
        utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
    ) {
        let description = format!("Missing or invalid {SESSION_KEY_HEADER} header");
        (
            "MissingSessionKey",
            utoipa::openapi::ResponseBuilder::new()
                .description(description)
                .build()
                .into(),
        )
    }
}

/// The accepted session keys; shared and replaceable (e.g. by a deferred init).
#[derive(Debug, Clone, Default)]
pub struct SessionKeys {
    keys: Arc<RwLock<Vec<String>>>,
}

impl SessionKeys {
    /// Keys `keys` (blank ones are dropped).
    pub fn new(keys: Vec<String>) -> Self {
        Self {
            keys: Arc::new(RwLock::new(
                keys.into_iter().filter(|k| !k.is_empty()).collect(),
            )),
        }
    }

    /// Whether any key is configured.
    pub fn required(&self) -> bool {
        !self.keys.read().is_empty()
    }

    /// Whether `presented` is accepted: true when no key is configured,
    /// else when it equals one of the keys. Every key is compared in
    /// constant time so the answer does not leak which prefix matched.
    pub fn accepts(&self, presented: Option<&str>) -> bool {
        let keys = self.keys.read();
        if keys.is_empty() {
            return true;
        }
        let Some(presented) = presented.filter(|p| !p.is_empty()) else {
            return false;
        };
        let mut ok = subtle::Choice::from(0u8);
        for key in keys.iter() {
            ok |= key.as_bytes().ct_eq(presented.as_bytes());
        }
        bool::from(ok)
    }

    /// Replaces the keys.
    pub fn replace(&self, keys: Vec<String>) {
        *self.keys.write() = keys.into_iter().filter(|k| !k.is_empty()).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_exactly() {
        let open = SessionKeys::new(vec![]);
        assert!(!open.required());
        assert!(open.accepts(None));
        let keys = SessionKeys::new(vec!["alpha".into(), "".into(), "beta".into()]);
        assert!(keys.required());
        assert!(keys.accepts(Some("alpha")));
        assert!(keys.accepts(Some("beta")));
        assert!(!keys.accepts(Some("alph")));
        assert!(!keys.accepts(Some("alphaa")));
        assert!(!keys.accepts(Some("")));
        assert!(!keys.accepts(None));
        keys.replace(vec!["gamma".into()]);
        assert!(!keys.accepts(Some("alpha")));
        assert!(keys.accepts(Some("gamma")));
    }
}
