//! [`Consent`]: authorizing, when a session starts, the OAuth servers that
//! have no tokens yet, for hosts with a user at hand (a program on the SDK,
//! a terminal session). Each such server gets one [`Authorization`]: its
//! URL goes to the [`ConsentPrompt`] (printed, opened in a browser), the
//! redirect comes back to the loopback listener, and the tokens land in
//! the session's state store before the server is connected. Without a
//! `Consent` a session only uses stored tokens.

use super::authorize::{Authorization, OAuthError};
use super::config::OAuthConfig;
use super::state::{OAuthStateStore, key};
use std::sync::Arc;
use std::time::Duration;

/// Shows the user the URL that authorizes an MCP server.
pub trait ConsentPrompt: Send + Sync {
    /// `url` authorizes the server named `server`; the user opens it.
    fn show(&self, server: &str, url: &str);
}

/// Interactive authorization of servers without tokens.
#[derive(Clone)]
pub struct Consent {
    /// Who shows the URL.
    pub prompt: Arc<dyn ConsentPrompt>,
    /// How long one authorization waits for the user.
    pub limit: Duration,
}

impl std::fmt::Debug for Consent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consent")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Whether a server at `url` with OAuth settings `cfg` has no access
/// token, neither stored nor in its own `auth.state`.
pub async fn needs_authorization(
    url: &str,
    cfg: &OAuthConfig,
    store: &dyn OAuthStateStore,
) -> bool {
    let stored = store.load(&key(url)).await;
    stored
        .as_ref()
        .or(cfg.state.as_ref())
        .is_none_or(|s| s.access_token().is_none())
}

impl Consent {
    /// Authorizes the server `name` at `url` interactively.
    pub async fn authorize(
        &self,
        name: &str,
        url: &str,
        cfg: &OAuthConfig,
        store: Arc<dyn OAuthStateStore>,
    ) -> Result<(), OAuthError> {
        let auth = Authorization::begin(url, cfg, store).await?;
        self.prompt.show(name, auth.authorization_url());
        auth.complete(self.limit).await
    }
}
