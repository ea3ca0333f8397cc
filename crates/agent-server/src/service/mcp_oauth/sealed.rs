//! The secret members of an MCP server's OAuth state
//! (`tokens.access_token`, `tokens.refresh_token`,
//! `client_info.client_secret`): Fernet-encrypted with the server's key
//! when stored or answered, decrypted before use — as the reference's
//! `MCPOAuthState` does.

use openhands_mcp::oauth::OAuthState;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use serde_json::{Map, Value};

const SECRET_MEMBERS: &[(&str, &str)] = &[
    ("tokens", "access_token"),
    ("tokens", "refresh_token"),
    ("client_info", "client_secret"),
];

fn each_secret(state: &mut Map<String, Value>, mut f: impl FnMut(&str) -> Option<String>) {
    for (outer, inner) in SECRET_MEMBERS {
        if let Some(Value::String(s)) = state
            .get_mut(*outer)
            .and_then(Value::as_object_mut)
            .and_then(|o| o.get_mut(*inner))
            && let Some(new) = f(s)
        {
            *s = new;
        }
    }
}

/// `state` with its secrets encrypted by `cipher` (unchanged without one,
/// as the reference answers in plain text when no key is configured).
pub fn seal(state: &OAuthState, cipher: Option<&Cipher>) -> Value {
    let mut v = state.to_json();
    if let (Some(c), Value::Object(m)) = (cipher, &mut v) {
        each_secret(m, |s| (!looks_encrypted(s)).then(|| c.encrypt(s)));
    }
    v
}

/// The state of a stored or submitted `auth.state` object with its
/// encrypted secrets decrypted (values that do not decrypt are kept).
pub fn open(state: &Map<String, Value>, cipher: Option<&Cipher>) -> OAuthState {
    let mut m = state.clone();
    if let Some(c) = cipher {
        each_secret(&mut m, |s| {
            if looks_encrypted(s) {
                c.decrypt(s)
            } else {
                None
            }
        });
    }
    OAuthState::from_json(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_sealed_and_opened_the_rest_kept() {
        let c = Cipher::new("a-secret-key-for-tests", &[]).unwrap();
        let state = OAuthState::from_json(
            json!({"tokens": {"access_token": "a", "refresh_token": "r", "expires_in": 5},
                   "client_info": {"client_id": "id", "client_secret": "s"},
                   "token_expires_at": 9.0})
            .as_object()
            .cloned()
            .unwrap(),
        );
        let sealed = seal(&state, Some(&c));
        let text = sealed.to_string();
        assert!(!text.contains("\"a\"") && !text.contains("\"r\"") && !text.contains("\"s\""));
        assert_eq!(sealed["client_info"]["client_id"], "id");
        assert_eq!(sealed["token_expires_at"], 9.0);
        assert_eq!(open(sealed.as_object().unwrap(), Some(&c)), state);
        assert_eq!(seal(&state, None), state.to_json());
    }
}
