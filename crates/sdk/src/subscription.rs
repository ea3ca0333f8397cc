//! The reference's `LLM.subscription_login(vendor, model, force_login,
//! open_browser, auth_method, skip_consent)` for a program on the SDK: an
//! LLM paid by the user's ChatGPT plan, signed in once (in a browser by
//! default, or by device code) with the tokens kept and refreshed in the
//! user's credentials directory (`$OH_PERSISTENCE_DIR/auth`, else
//! `~/.openhands/auth`), shared with the command line and a local agent
//! server. The flows themselves are `openhands_llm::subscription`'s; this
//! adds what needs the user's desktop: the sign-in URL printed and, with
//! `open_browser`, opened in their browser.

use openhands_llm::subscription::{self, AuthMethod, LoginOptions};
use openhands_llm::{Llm, LlmError};

/// The options of [`subscription_login`], with the reference's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionLogin {
    /// The vendor (only `openai`).
    pub vendor: String,
    /// The model (`gpt-5.5` by default; see
    /// `openhands_llm::subscription::openai::CODEX_MODELS`).
    pub model: String,
    /// Sign in again even when stored tokens are usable.
    pub force_login: bool,
    /// Open the sign-in URL in the user's browser (it is printed either
    /// way).
    pub open_browser: bool,
    /// Browser (default) or device code.
    pub auth_method: AuthMethod,
    /// Do not show the terms notice (accepted elsewhere).
    pub skip_consent: bool,
}

impl Default for SubscriptionLogin {
    fn default() -> Self {
        Self {
            vendor: subscription::openai::VENDOR.into(),
            model: subscription::openai::DEFAULT_MODEL.into(),
            force_login: false,
            open_browser: true,
            auth_method: AuthMethod::Browser,
            skip_consent: false,
        }
    }
}

/// Signs in as `login` says (stored tokens are reused unless
/// `force_login`) and returns the LLM on the subscription.
///
/// ```no_run
/// # async fn demo() -> Result<(), openhands_llm::LlmError> {
/// use openhands_sdk::subscription::{SubscriptionLogin, subscription_login};
///
/// let llm = subscription_login(SubscriptionLogin {
///     model: "gpt-5.5".into(),
///     ..SubscriptionLogin::default()
/// })
/// .await?;
/// # let _ = llm; Ok(()) }
/// ```
pub async fn subscription_login(login: SubscriptionLogin) -> Result<Llm, LlmError> {
    let auth = subscription::default_auth()?;
    subscription::subscription_login(&auth, &login.vendor, &login.model, options(&login)).await
}

/// The flow's options for `login`: the URL printed, opened in a browser
/// when `open_browser` and there is a desktop.
pub fn options(login: &SubscriptionLogin) -> LoginOptions {
    let open = login.open_browser;
    LoginOptions {
        force_login: login.force_login,
        auth_method: login.auth_method,
        skip_consent: login.skip_consent,
        on_authorize_url: Box::new(move |url| {
            println!(
                "\nTo sign in to ChatGPT, open this URL in a browser on this machine:\n{url}\n"
            );
            if open && let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(crate::desktop::open_browser(url.to_string()));
            }
        }),
        ..LoginOptions::default()
    }
}
