//! Offline runs: the project's scripted LLM, which answers from a JSON
//! script instead of a model (see the `openhands-testkit` crate for the
//! format). Enabled by the `testing` feature.

use crate::llm_builder::{ENV_API_KEY, LlmBuilder};
use openhands_llm::{Llm, LlmError};
pub use openhands_testkit::{
    MockLlmHandle, MockLlmServer, MockServerError, Script, ScriptLoadError, ScriptedLlm, Turn,
};
use std::sync::Arc;

/// Model name the scripted LLM reports.
pub const SCRIPTED_MODEL: &str = "openai/scripted";

/// Why an LLM for an offline-capable program could not be made.
///
/// ```
/// use openhands::testing::{OfflineLlmError, scripted_llm};
///
/// let err = scripted_llm("not json").unwrap_err();
/// assert!(matches!(OfflineLlmError::from(err), OfflineLlmError::Script(_)));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum OfflineLlmError {
    /// The script is malformed.
    #[error(transparent)]
    Script(#[from] ScriptLoadError),
    /// The real provider's configuration is unusable.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The scripted LLM's HTTP server could not start.
    #[error(transparent)]
    Server(#[from] MockServerError),
}

/// An LLM answering from `script` (the scripted LLM's JSON format).
///
/// ```
/// let llm = openhands::testing::scripted_llm(r#"[{"text": "Hello!"}]"#).unwrap();
/// assert_eq!(llm.model(), "openai/scripted");
/// ```
pub fn scripted_llm(script: &str) -> Result<Llm, ScriptLoadError> {
    let backend = ScriptedLlm::from_json_str(script)?;
    Ok(LlmBuilder::new(SCRIPTED_MODEL)
        .usage_id("agent")
        .num_retries(1)
        .build_with_backend(Arc::new(backend)))
}

/// A real LLM when `LLM_API_KEY` is set (model and endpoint from
/// `LLM_MODEL`/`LLM_BASE_URL`, see [`LlmBuilder::from_env`]), otherwise the
/// scripted LLM answering from `script`: how every example runs both
/// against a provider and offline.
///
/// ```
/// let llm = openhands::testing::llm_from_env_or_script(r#"[{"text": "Hello!"}]"#).unwrap();
/// if !openhands::testing::uses_real_llm() {
///     assert_eq!(llm.model(), openhands::testing::SCRIPTED_MODEL);
/// }
/// ```
pub fn llm_from_env_or_script(script: &str) -> Result<Llm, OfflineLlmError> {
    if uses_real_llm() {
        Ok(LlmBuilder::from_env().usage_id("agent").build()?)
    } else {
        Ok(scripted_llm(script)?)
    }
}

/// Whether [`llm_from_env_or_script`] would use a real provider.
pub fn uses_real_llm() -> bool {
    openhands_workspace::exec::env::host_var(ENV_API_KEY).is_some_and(|k| !k.trim().is_empty())
}

/// The scripted LLM over HTTP: a [`MockLlmServer`] on `127.0.0.1`
/// answering from `script` (OpenAI Chat and Responses, Anthropic), and a
/// builder pointing at it. Keep the handle alive while the model is used.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (builder, server) =
///     openhands::testing::scripted_llm_endpoint(r#"[{"text": "Hi"}]"#).await.unwrap();
/// assert_eq!(builder.config().base_url.as_deref(), Some(server.base_url().as_str()));
/// # }
/// ```
pub async fn scripted_llm_endpoint(
    script: &str,
) -> Result<(LlmBuilder, MockLlmHandle), OfflineLlmError> {
    let server = MockLlmServer::start(Script::from_json_str(script)?, 0).await?;
    let builder = LlmBuilder::new(SCRIPTED_MODEL)
        .usage_id("agent")
        .api_key("scripted")
        .base_url(server.base_url())
        .num_retries(1);
    Ok((builder, server))
}

/// An LLM reachable over HTTP, for programs where another process (an
/// agent server, an OpenAI client) calls the model: with `LLM_API_KEY`
/// set, [`LlmBuilder::from_env`] and no server; otherwise
/// [`scripted_llm_endpoint`].
///
/// ```no_run
/// # async fn demo() -> Result<(), openhands::testing::OfflineLlmError> {
/// let (builder, _server) =
///     openhands::testing::llm_endpoint_from_env_or_script(r#"[{"text": "Hi"}]"#).await?;
/// let llm = builder.build()?;
/// # Ok(()) }
/// ```
pub async fn llm_endpoint_from_env_or_script(
    script: &str,
) -> Result<(LlmBuilder, Option<MockLlmHandle>), OfflineLlmError> {
    if uses_real_llm() {
        return Ok((LlmBuilder::from_env().usage_id("agent"), None));
    }
    let (builder, server) = scripted_llm_endpoint(script).await?;
    Ok((builder, Some(server)))
}
