//! [`Authorization`]: one interactive authorization of a remote server —
//! discovery, dynamic client registration (or the configured client), the
//! authorization URL with a PKCE challenge, then the code from the
//! redirect exchanged for tokens, which land in the state store.

use super::config::OAuthConfig;
use super::state::{OAuthState, OAuthStateStore, StateCredentials, key};
use openhands_client::loopback::{CallbackListener, Page};
use rmcp::transport::auth::{AuthorizationManager, AuthorizationRequest, AuthorizationSession};
use std::sync::Arc;
use std::time::Duration;

/// The client name sent at dynamic registration when none is configured.
const DEFAULT_CLIENT_NAME: &str = "OpenHands";

/// Why an authorization failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OAuthError {
    /// Discovery, registration or the authorization URL failed.
    #[error("OAuth authorization could not start: {0}")]
    Start(String),
    /// No redirect arrived in time.
    #[error("OAuth authorization timed out after {0:?} waiting for the callback")]
    Timeout(Duration),
    /// The code exchange failed.
    #[error("OAuth token exchange failed: {0}")]
    Exchange(String),
}

/// An authorization waiting for the user's consent.
pub struct Authorization {
    session: AuthorizationSession,
    listener: CallbackListener,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("redirect_uri", &self.listener.redirect_uri())
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// Starts authorizing `url`: a loopback callback listener, discovery,
    /// the client (configured, or registered now and recorded in `store`),
    /// and the authorization URL. Tokens are written to `store` under the
    /// server's URL when [`Authorization::complete`] exchanges the code.
    pub async fn begin(
        url: &str,
        cfg: &OAuthConfig,
        store: Arc<dyn OAuthStateStore>,
    ) -> Result<Self, OAuthError> {
        let start = |e: String| OAuthError::Start(e);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = CallbackListener::bind(0, "/callback")
            .await
            .map_err(|e| start(format!("cannot listen for the callback: {e}")))?;
        let redirect = listener.redirect_uri().to_string();
        let mut m = AuthorizationManager::new(url)
            .await
            .map_err(|e| start(e.to_string()))?;
        m.set_credential_store(StateCredentials {
            url: url.to_string(),
            seed: None,
            client_id: None,
            store: store.clone(),
        });
        let metadata = m
            .resolve_metadata()
            .await
            .map_err(|e| start(format!("discovery failed: {e}")))?;
        m.set_metadata(metadata.metadata);
        let mut request = AuthorizationRequest::new(redirect.clone());
        if !cfg.scopes.is_empty() {
            request = request.with_scopes(cfg.scopes.iter().cloned());
        }
        let name = cfg.client_name.as_deref().unwrap_or(DEFAULT_CLIENT_NAME);
        request = request.with_client_name(name);
        let mut state = OAuthState::default();
        if let Some(id) = &cfg.client_id {
            request = request.with_preregistered_client(id.clone());
            if let Some(s) = &cfg.client_secret {
                request = request.with_client_secret(s.clone());
            }
            state.set_client(id, cfg.client_secret.as_deref(), &redirect);
        } else if let Some(u) = &cfg.client_metadata_url {
            request = request.with_client_metadata_url(u.clone());
        } else {
            // Registered here rather than by the session, so a secret the
            // server may issue is kept for refreshing later.
            let scopes = if cfg.scopes.is_empty() {
                m.select_scopes(None, &[])
            } else {
                cfg.scopes.clone()
            };
            let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let reg = m
                .register_client(name, &redirect, &refs)
                .await
                .map_err(|e| start(format!("dynamic client registration failed: {e}")))?;
            request = request.with_preregistered_client(reg.client_id.clone());
            if let Some(s) = &reg.client_secret {
                request = request.with_client_secret(s.clone());
            }
            state.set_client(&reg.client_id, reg.client_secret.as_deref(), &redirect);
        }
        if state.client_id().is_some() {
            store.save(&key(url), state).await;
        }
        let session = AuthorizationSession::new(m, request)
            .await
            .map_err(|(_, e)| start(e.to_string()))?;
        Ok(Self { session, listener })
    }

    /// The URL the user opens to consent.
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// Where the authorization server redirects to
    /// (`http://localhost:<port>/callback`).
    pub fn callback_url(&self) -> &str {
        self.listener.redirect_uri()
    }

    /// Waits (up to `limit`) for the redirect to reach the callback
    /// listener, then exchanges its code (the PKCE verifier and `state`
    /// are checked) for tokens, which are saved to the store.
    pub async fn complete(mut self, limit: Duration) -> Result<(), OAuthError> {
        let callback = match tokio::time::timeout(limit, self.listener.received()).await {
            Ok(Some(callback)) => callback,
            Ok(None) => return Err(OAuthError::Exchange("the callback listener stopped".into())),
            Err(_) => return Err(OAuthError::Timeout(limit)),
        };
        let result = self
            .session
            .handle_callback_url(&callback.url)
            .await
            .map(|_| ())
            .map_err(|e| OAuthError::Exchange(e.to_string()));
        // 200 either way: the agent server forwards a copied callback URL
        // here and reads the outcome from the job, not from this page.
        callback.reply(match &result {
            Ok(()) => Page {
                status: 200,
                html: COMPLETE_PAGE.into(),
            },
            Err(e) => Page {
                status: 200,
                html: format!(
                    "<html><body><p>Authorization failed: {}</p></body></html>",
                    html_escape(&e.to_string())
                ),
            },
        });
        self.listener.close().await;
        result
    }
}

const COMPLETE_PAGE: &str =
    "<html><body><p>Authorization complete. You may close this window.</p></body></html>";

/// `text` safe inside HTML.
fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
