//! Subscription sign-in: LLM calls paid by a ChatGPT plan instead of an API
//! key (`auth_type: "subscription"`, `subscription_vendor: "openai"`).
//!
//! `store` keeps the tokens where the reference keeps them; `openai` signs
//! in by device code, refreshes, and shapes the calls for the Codex
//! backend; `browser` signs in in a browser (PKCE, loopback redirect);
//! `consent` shows the terms notice first. Calls of a subscription LLM take their tokens from the
//! process's [`SubscriptionSource`]: the stored tokens in the default
//! directory with [`Endpoints::from_env`](openai::Endpoints::from_env),
//! unless a host (the agent server, with its own directory and sealed
//! tokens) [`install`]s another.

pub mod browser;
pub mod consent;
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

/// How the user signs in (the reference's `auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMethod {
    /// In a browser on this machine, the redirect caught on a loopback
    /// port (`"browser"`, the default).
    #[default]
    Browser,
    /// With a code typed at the issuer's device page, from any browser
    /// (`"device_code"`).
    DeviceCode,
}

impl std::str::FromStr for AuthMethod {
    type Err = LlmError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "browser" => Ok(Self::Browser),
            "device_code" => Ok(Self::DeviceCode),
            other => Err(LlmError::Config(format!(
                "auth_method: {other:?} is not a sign-in method; use \"browser\" or \"device_code\""
            ))),
        }
    }
}

/// How [`subscription_login`] signs in; the defaults are the reference's
/// (browser, terms asked in the terminal, port 1455).
pub struct LoginOptions {
    /// Sign in again even when stored tokens are usable.
    pub force_login: bool,
    /// Browser or device code.
    pub auth_method: AuthMethod,
    /// Do not show the terms notice (they were accepted elsewhere).
    pub skip_consent: bool,
    /// Shows the terms notice and asks ([`consent::terminal_prompt`]).
    pub consent: consent::Prompt,
    /// The browser sign-in's callback port ([`browser::default_port`];
    /// 0 picks a free one).
    pub oauth_port: u16,
    /// Told the browser sign-in's URL: shows it, may open a browser.
    pub on_authorize_url: Box<dyn FnOnce(&str) + Send>,
    /// Told the device code to show the user.
    pub on_device_code: Box<dyn FnOnce(&openai::DeviceCode) + Send>,
    /// How long the sign-in may take (default: 5 minutes in the browser,
    /// 15 by device code, as the reference).
    pub timeout: Option<std::time::Duration>,
}

impl Default for LoginOptions {
    fn default() -> Self {
        Self {
            force_login: false,
            auth_method: AuthMethod::default(),
            skip_consent: false,
            consent: consent::terminal_prompt(),
            oauth_port: browser::default_port(),
            on_authorize_url: Box::new(|url| {
                println!(
                    "\nTo sign in to ChatGPT, open this URL in a browser on this machine:\n{url}\n"
                );
            }),
            on_device_code: Box::new(|code| {
                println!(
                    "\nTo sign in to ChatGPT, open {} in any browser and enter the code {}\n\
                     (keep the code to yourself: nobody legitimate asks you for it)\n",
                    code.verification_url, code.user_code
                );
            }),
            timeout: None,
        }
    }
}

/// The reference's `subscription_login(vendor, model, force_login,
/// auth_method, skip_consent)`: stored tokens are reused (refreshed when
/// expired) unless `force_login`; otherwise the terms notice is shown
/// (unless `skip_consent`) and the user signs in by `auth_method`, the
/// tokens saved in `auth`'s store. Returns the LLM on the subscription.
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
        if !options.skip_consent {
            consent::confirm(auth.store().dir(), options.consent).await?;
        }
        match options.auth_method {
            AuthMethod::Browser => {
                let timeout = options.timeout.unwrap_or(browser::BROWSER_TIMEOUT);
                auth.login_browser(options.oauth_port, options.on_authorize_url, timeout)
                    .await?;
            }
            AuthMethod::DeviceCode => {
                let timeout = options.timeout.unwrap_or(openai::DEVICE_CODE_TIMEOUT);
                auth.login_device(options.on_device_code, timeout).await?;
            }
        }
    }
    crate::Llm::new(config)
}
