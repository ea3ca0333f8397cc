//! The authorization manager of one connection: the stored state only (a
//! connection never asks a user to authorize), metadata discovered again
//! so an expired token is refreshed at the authorization server's own
//! token endpoint, and the refreshed state saved back to the store.

use super::config::OAuthConfig;
use super::state::{OAuthStateStore, StateCredentials};
use crate::transport_error::TransportError;
use rmcp::transport::auth::{AuthClient, AuthorizationManager, OAuthClientConfig};
use std::sync::Arc;

/// A manager holding the stored tokens of `url`, or an error saying the
/// server must be authorized again.
pub(crate) async fn manager(
    url: &str,
    cfg: &OAuthConfig,
    store: Arc<dyn OAuthStateStore>,
) -> Result<AuthorizationManager, TransportError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let oauth = |step| {
        move |source| TransportError::OAuth {
            step,
            source: Box::new(source),
        }
    };
    let mut m = AuthorizationManager::new(url)
        .await
        .map_err(oauth("setup"))?;
    let seed = cfg.state.clone();
    let current = match store.load(&super::state::key(url)).await {
        Some(s) => Some(s),
        None => seed.clone(),
    };
    m.set_credential_store(StateCredentials {
        url: url.to_string(),
        seed,
        client_id: cfg.client_id.clone(),
        store,
    });
    match m.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Err(TransportError::Reauthorize(url.to_string())),
        Err(e) => return Err(oauth("discovery")(e)),
    }
    let secret = current
        .as_ref()
        .and_then(|s| s.client_secret().map(str::to_string))
        .or_else(|| cfg.client_secret.clone());
    if let Some(secret) = secret {
        let client_id = current
            .as_ref()
            .and_then(|s| s.client_id().map(str::to_string))
            .or_else(|| cfg.client_id.clone())
            .unwrap_or_default();
        let redirect = current
            .as_ref()
            .and_then(|s| s.redirect_uri().map(str::to_string))
            .unwrap_or_else(|| url.to_string());
        m.configure_client(OAuthClientConfig::new(client_id, redirect).with_client_secret(secret))
            .map_err(oauth("client setup"))?;
    }
    Ok(m)
}

/// The current access token of a connection (refreshed when it is about
/// to expire), for transports that set the header themselves.
#[derive(Clone)]
pub(crate) struct TokenSource(AuthClient<()>);

impl TokenSource {
    pub(crate) fn new(manager: AuthorizationManager) -> Self {
        Self(AuthClient::new((), manager))
    }

    /// A valid access token, or why there is none.
    pub(crate) async fn token(&self, url: &str) -> Result<String, TransportError> {
        self.0.get_access_token().await.map_err(|e| match e {
            rmcp::transport::auth::AuthError::AuthorizationRequired => {
                TransportError::Reauthorize(url.to_string())
            }
            other => TransportError::Token(Box::new(other)),
        })
    }
}
