//! [`OAuthConfig`]: `auth: {"strategy": "oauth2", "authentication": {...},
//! "state": {...}}` of a remote server, as the reference reads it.

use super::state::OAuthState;
use serde_json::{Map, Value};

/// The OAuth settings of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthConfig {
    /// Scopes to ask for (`authentication.scopes`, a list or a
    /// space-separated string); empty: the server's advertised scopes.
    pub scopes: Vec<String>,
    /// `client_name` sent at dynamic registration.
    pub client_name: Option<String>,
    /// A pre-registered client (`client_id`), instead of registration.
    pub client_id: Option<String>,
    /// Its secret (`client_secret`).
    pub client_secret: Option<String>,
    /// A Client ID Metadata Document URL (`client_metadata_url`).
    pub client_metadata_url: Option<String>,
    /// The stored state (`auth.state`: tokens and client registration),
    /// secrets in plain text.
    pub state: Option<OAuthState>,
}

type FieldError = (String, String);

impl OAuthConfig {
    /// Parses the `auth` object of strategy `oauth2`; an error names the
    /// offending field (`auth.authentication.<name>`).
    pub(crate) fn parse(auth: &Map<String, Value>) -> Result<Self, FieldError> {
        let mut out = Self::default();
        if let Some(state) = auth.get("state").filter(|v| !v.is_null()) {
            let Value::Object(s) = state else {
                return Err(("auth.state".into(), "auth.state must be an object".into()));
            };
            let state = OAuthState::from_json(s.clone());
            out.state = (!state.is_empty()).then_some(state);
        }
        let a = match auth.get("authentication") {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Object(a)) => a,
            Some(_) => {
                return Err((
                    "auth.authentication".into(),
                    "auth.authentication must be an object".into(),
                ));
            }
        };
        let field = |k: &str| format!("auth.authentication.{k}");
        let text = |k: &str| -> Result<Option<String>, FieldError> {
            match a.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err((field(k), format!("{} must be a string", field(k)))),
            }
        };
        for k in a.keys() {
            if ![
                "type",
                "client_auth_method",
                "scopes",
                "client_name",
                "client_metadata_url",
                "client_id",
                "client_secret",
                "additional_client_metadata",
            ]
            .contains(&k.as_str())
            {
                return Err((field(k), format!("unknown field '{}'", field(k))));
            }
        }
        if text("type")?.as_deref() != Some("oauth") {
            return Err((field("type"), format!("{} must be 'oauth'", field("type"))));
        }
        match text("client_auth_method")?.as_deref() {
            None | Some("none") => {}
            Some(m @ ("client_secret_post" | "client_secret_basic" | "private_key_jwt")) => {
                return Err((
                    field("client_auth_method"),
                    format!(
                        "{} '{m}' is not supported by this server (clients register as public clients, 'none')",
                        field("client_auth_method")
                    ),
                ));
            }
            Some(other) => {
                return Err((
                    field("client_auth_method"),
                    format!("unknown {} '{other}'", field("client_auth_method")),
                ));
            }
        }
        if a.get("additional_client_metadata").is_some_and(|v| {
            v.as_object().is_some_and(|m| !m.is_empty()) || !(v.is_null() || v.is_object())
        }) {
            return Err((
                field("additional_client_metadata"),
                format!(
                    "{} is not supported by this server",
                    field("additional_client_metadata")
                ),
            ));
        }
        out.scopes = match a.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        (
                            field("scopes"),
                            format!("{} must be strings", field("scopes")),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err((
                    field("scopes"),
                    format!("{} must be a string or a list of strings", field("scopes")),
                ));
            }
        };
        out.client_name = text("client_name")?.filter(|s| !s.is_empty());
        out.client_id = text("client_id")?.filter(|s| !s.is_empty());
        out.client_secret = text("client_secret")?.filter(|s| !s.is_empty());
        out.client_metadata_url = text("client_metadata_url")?.filter(|s| !s.is_empty());
        if out.client_secret.is_some() && out.client_id.is_none() {
            return Err((
                field("client_secret"),
                format!(
                    "{} needs auth.authentication.client_id",
                    field("client_secret")
                ),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<OAuthConfig, FieldError> {
        OAuthConfig::parse(v.as_object().unwrap())
    }

    #[test]
    fn authentication_and_state_are_read_and_unsupported_methods_refused() {
        let c = parse(json!({"strategy": "oauth2", "authentication": {
            "type": "oauth", "scopes": "a b", "client_name": "me"},
            "state": {"tokens": {"access_token": "t"}}}))
        .unwrap();
        assert_eq!(c.scopes, vec!["a", "b"]);
        assert_eq!(c.client_name.as_deref(), Some("me"));
        assert_eq!(c.state.unwrap().access_token(), Some("t"));
        assert_eq!(
            parse(json!({"strategy": "oauth2"})).unwrap(),
            OAuthConfig::default()
        );
        let e = parse(
            json!({"authentication": {"type": "oauth", "client_auth_method": "private_key_jwt"}}),
        )
        .unwrap_err();
        assert_eq!(e.0, "auth.authentication.client_auth_method");
        let e = parse(json!({"authentication": {"type": "oauth", "bogus": 1}})).unwrap_err();
        assert_eq!(e.0, "auth.authentication.bogus");
        let e =
            parse(json!({"authentication": {"type": "oauth", "client_secret": "s"}})).unwrap_err();
        assert_eq!(e.0, "auth.authentication.client_secret");
    }
}
