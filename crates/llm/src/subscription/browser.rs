//! ChatGPT sign-in in the user's browser, the reference's default
//! (`auth_method="browser"`): an authorization-code flow with PKCE (S256)
//! whose redirect comes back to a loopback listener
//! (`http://localhost:1455/auth/callback`, the port from
//! `OPENHANDS_OAUTH_PORT` when set), a random `state` checked on the way
//! back, the code exchanged at `{issuer}/oauth/token` with the verifier,
//! the tokens saved in the same store the device flow and the server's
//! sign-in use. The browser is shown a page saying how it ended.

use super::openai::{AuthError, CLIENT_ID, OpenAiAuth, credentials_from};
use super::store::OAuthCredentials;
use base64::Engine;
use openhands_client::loopback::{Callback, CallbackListener, Page};
use std::time::Duration;

/// The reference's callback port.
pub const DEFAULT_OAUTH_PORT: u16 = 1455;
/// The variable naming another callback port.
pub const OAUTH_PORT_VAR: &str = "OPENHANDS_OAUTH_PORT";
/// The callback's path.
pub const CALLBACK_PATH: &str = "/auth/callback";
/// How long the browser sign-in waits for the redirect (the reference's
/// 5 minutes).
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(300);
/// The scopes asked for.
const SCOPE: &str = "openid profile email offline_access";

/// The callback port: `OPENHANDS_OAUTH_PORT` when it holds a port number,
/// else [`DEFAULT_OAUTH_PORT`].
pub fn default_port() -> u16 {
    crate::provider_env::var(OAUTH_PORT_VAR)
        .and_then(|v| v.trim().parse::<u16>().ok())
        .unwrap_or(DEFAULT_OAUTH_PORT)
}

/// `n` random bytes, base64url without padding.
fn random_token(n: usize) -> Result<String, AuthError> {
    use ring::rand::SecureRandom;
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| AuthError::Upstream("no random numbers for the sign-in".into()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The S256 challenge of a PKCE verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// The authorization URL the user opens (the reference's parameters).
pub fn authorize_url(issuer: &str, redirect_uri: &str, challenge: &str, state: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", redirect_uri),
            ("scope", SCOPE),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("id_token_add_organizations", "true"),
            ("codex_cli_simplified_flow", "true"),
            ("state", state),
            ("originator", "openhands"),
        ])
        .finish();
    format!("{issuer}/oauth/authorize?{query}")
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(status: u16, title: &str, detail: &str) -> Page {
    Page {
        status,
        html: format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>OpenHands: {title}</title></head>\
             <body style=\"font-family: system-ui, sans-serif; text-align: center; margin-top: 20vh\">\
             <h1>{title}</h1><p>{}</p></body></html>",
            escape(detail)
        ),
    }
}

impl OpenAiAuth {
    /// The whole browser sign-in: listens on `port` (0: a free one), hands
    /// the authorization URL to `show` (the caller prints it and may open
    /// a browser), waits up to `timeout` for the redirect, checks its
    /// `state`, exchanges the code with the PKCE verifier, saves and
    /// returns the credentials.
    pub async fn login_browser(
        &self,
        port: u16,
        show: impl FnOnce(&str),
        timeout: Duration,
    ) -> Result<OAuthCredentials, AuthError> {
        let mut listener =
            CallbackListener::bind(port, CALLBACK_PATH)
                .await
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::AddrInUse => AuthError::PortInUse(port),
                    _ => AuthError::Upstream(format!(
                        "cannot listen for the sign-in's callback on port {port}: {e}"
                    )),
                })?;
        let verifier = random_token(32)?;
        let state = random_token(32)?;
        let redirect_uri = listener.redirect_uri().to_string();
        show(&authorize_url(
            &self.endpoints().issuer,
            &redirect_uri,
            &pkce_challenge(&verifier),
            &state,
        ));
        let callback = match tokio::time::timeout(timeout, listener.received()).await {
            Ok(Some(c)) => c,
            Ok(None) => return Err(AuthError::Upstream("the callback listener stopped".into())),
            Err(_) => return Err(AuthError::BrowserTimedOut(timeout)),
        };
        let outcome = self
            .finish_browser(&callback, &state, &redirect_uri, &verifier)
            .await;
        callback.reply(match &outcome {
            Ok(_) => page(
                200,
                "Signed in",
                "OpenHands can use your ChatGPT plan now. This window may be closed.",
            ),
            Err(e) => page(
                if matches!(e, AuthError::Upstream(_)) {
                    500
                } else {
                    400
                },
                "Sign-in failed",
                &e.to_string(),
            ),
        });
        listener.close().await;
        outcome
    }

    /// Checks a redirect and exchanges its code; saves the credentials.
    async fn finish_browser(
        &self,
        callback: &Callback,
        state: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<OAuthCredentials, AuthError> {
        if let Some(error) = callback.param("error") {
            let why = callback.param("error_description").unwrap_or(error);
            return Err(AuthError::Refused(format!(
                "the sign-in was refused: {why}"
            )));
        }
        let Some(code) = callback.param("code").filter(|c| !c.is_empty()) else {
            return Err(AuthError::Refused(
                "the redirect carried no authorization code".into(),
            ));
        };
        if callback.param("state").as_deref() != Some(state) {
            return Err(AuthError::Refused(
                "the redirect's state is not this sign-in's (a forged or stale redirect); \
                 nothing was stored"
                    .into(),
            ));
        }
        let tokens = self
            .token_request(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect_uri),
                ("client_id", CLIENT_ID),
                ("code_verifier", verifier),
            ])
            .await
            .map_err(|s| AuthError::Upstream(format!("Token exchange failed: {s}")))?;
        let creds = credentials_from(&tokens)?;
        self.store().save(&creds).await?;
        Ok(creds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn the_authorize_url_carries_the_references_parameters() {
        let u = authorize_url(
            "http://i",
            "http://localhost:1455/auth/callback",
            "ch",
            "st",
        );
        let parsed = url::Url::parse(&u).unwrap();
        assert_eq!(parsed.path(), "/oauth/authorize");
        let q: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(q["client_id"], CLIENT_ID);
        assert_eq!(q["redirect_uri"], "http://localhost:1455/auth/callback");
        assert_eq!(q["scope"], "openid profile email offline_access");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["state"], "st");
        assert_eq!(q["originator"], "openhands");
        assert_eq!(q.len(), 10);
    }

    #[test]
    fn verifiers_are_43_characters_and_differ() {
        let (a, b) = (random_token(32).unwrap(), random_token(32).unwrap());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }
}
