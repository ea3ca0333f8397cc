//! Subscription sign-in: LLM calls paid by a ChatGPT plan instead of an API
//! key (`auth_type: "subscription"`, `subscription_vendor: "openai"`).
//!
//! `store` keeps the tokens where the reference keeps them; `openai` signs
//! in by device code, refreshes, and shapes the calls for the Codex
//! backend. Calls of a subscription LLM take their tokens from the
//! process's [`SubscriptionSource`]: the stored tokens in the default
//! directory with [`Endpoints::from_env`](openai::Endpoints::from_env),
//! unless a host (the agent server, with its own directory and sealed
//! tokens) [`install`]s another.

pub mod openai;
pub mod store;

use crate::error::LlmError;
use async_trait::async_trait;
use parking_lot::RwLock;
use std::sync::{Arc, OnceLock};
use store::OAuthCredentials;

/// Where subscription LLM calls get fresh tokens and their backend's URL.
#[async_trait]
pub trait SubscriptionSource: Send + Sync {
    /// Valid credentials (refreshed when expired); an authentication error
    /// when nobody signed in.
    async fn credentials(&self) -> Result<OAuthCredentials, LlmError>;
    /// The Codex backend's base URL.
    fn codex_base(&self) -> String;
}

#[async_trait]
impl SubscriptionSource for openai::OpenAiAuth {
    async fn credentials(&self) -> Result<OAuthCredentials, LlmError> {
        self.refresh_if_needed()
            .await?
            .ok_or_else(|| openai::AuthError::LoginRequired.into())
    }

    fn codex_base(&self) -> String {
        self.endpoints().codex_base.clone()
    }
}

static INSTALLED: OnceLock<RwLock<Option<Arc<dyn SubscriptionSource>>>> = OnceLock::new();

fn slot() -> &'static RwLock<Option<Arc<dyn SubscriptionSource>>> {
    INSTALLED.get_or_init(|| RwLock::new(None))
}

/// Makes `source` the process's subscription source (the agent server
/// installs its credential store).
pub fn install(source: Arc<dyn SubscriptionSource>) {
    *slot().write() = Some(source);
}

/// The default sign-in: the reference's credential directory, the
/// endpoints from the environment.
pub fn default_auth() -> Result<openai::OpenAiAuth, LlmError> {
    let dir = store::default_dir().ok_or_else(|| {
        LlmError::Config(
            "no directory for subscription credentials: set OH_PERSISTENCE_DIR or HOME".into(),
        )
    })?;
    Ok(openai::OpenAiAuth::new(
        openai::Endpoints::from_env(),
        store::CredentialStore::new(dir, None),
    ))
}

/// The process's subscription source: the installed one, else
/// [`default_auth`].
pub fn source() -> Result<Arc<dyn SubscriptionSource>, LlmError> {
    if let Some(s) = slot().read().clone() {
        return Ok(s);
    }
    let auth: Arc<dyn SubscriptionSource> = Arc::new(default_auth()?);
    Ok(auth)
}

/// How [`subscription_login`] signs in.
pub struct LoginOptions {
    /// Sign in again even when stored tokens are usable.
    pub force_login: bool,
    /// Told the device code to show the user.
    pub on_device_code: Box<dyn FnOnce(&openai::DeviceCode) + Send>,
    /// How long the device login may take.
    pub timeout: std::time::Duration,
}

impl Default for LoginOptions {
    fn default() -> Self {
        Self {
            force_login: false,
            on_device_code: Box::new(|code| {
                tracing::info!(
                    url = %code.verification_url,
                    code = %code.user_code,
                    "open the URL and enter the code to sign in to ChatGPT"
                );
            }),
            timeout: openai::DEVICE_CODE_TIMEOUT,
        }
    }
}

/// The reference's `subscription_login(vendor, model)` by device code:
/// stored tokens are reused (refreshed when expired) unless
/// `force_login`; otherwise the user signs in with the code handed to
/// `on_device_code`. Returns the LLM on the subscription.
pub async fn subscription_login(
    auth: &openai::OpenAiAuth,
    vendor: &str,
    model: &str,
    options: LoginOptions,
) -> Result<crate::Llm, LlmError> {
    if vendor != openai::VENDOR {
        return Err(LlmError::Config(format!(
            "Vendor '{vendor}' is not supported. Only 'openai' is supported."
        )));
    }
    let config = openai::llm_config(model, auth.endpoints())?;
    let stored = if options.force_login {
        None
    } else {
        auth.refresh_if_needed().await?
    };
    if stored.is_none() {
        auth.login_device(options.on_device_code, options.timeout)
            .await?;
    }
    crate::Llm::new(config)
}
