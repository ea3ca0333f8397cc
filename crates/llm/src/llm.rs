//! [`Llm`]: a configuration plus a backend, with retries, timeouts,
//! non-native tool calling and metrics.

use crate::completion_log;
use crate::error::LlmError;
use crate::fallback::{is_budget_exceeded, metrics_since, should_fallback};
use crate::http::{HttpBackend, secs};
use crate::model_info::{self, ModelFeatures};
use crate::non_native;
use crate::retry::{self, RetryEvent, RetryListener};
use crate::router::{self, RouteMember, Router};
use crate::routing::{self, ApiKind};
use crate::types::{LlmBackend, LlmRequest, LlmResponse, TokenCallback};
use openhands_wire::LlmConfig;
use openhands_wire::llm_config::FallbackStrategy;
use openhands_wire::metrics::{Metrics, ResponseLatency};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Turns a profile name of a [`FallbackStrategy`] into an LLM (installed
/// with [`Llm::set_fallback_loader`]).
pub trait FallbackLoader: Send + Sync {
    /// The LLM of profile `name` (looked up in `strategy.profile_store_dir`
    /// or the default profile directory); an error says why not.
    fn load(&self, name: &str, strategy: &FallbackStrategy) -> Result<Llm, FallbackLoadError>;
}

/// Why a fallback profile's LLM was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum FallbackLoadError {
    /// No profile of that name.
    #[error("profile '{0}' not found")]
    NotFound(String),
    /// The profile could not be read (the store's own error).
    #[error("{0}")]
    Profile(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Its configuration makes no usable LLM.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The loader's blocking task did not finish.
    #[error("profile loader failed: {0}")]
    Interrupted(#[from] tokio::task::JoinError),
}

struct Inner {
    config: LlmConfig,
    backend: Arc<dyn LlmBackend>,
    metrics: Mutex<Metrics>,
    retry_listener: RwLock<Option<RetryListener>>,
    completion_log_sink: RwLock<Option<completion_log::CompletionLogSink>>,
    fallback: Mutex<FallbackState>,
    /// For a router configuration: its members and strategy.
    router: Option<Arc<Router<Llm>>>,
}

/// The loader of the configuration's fallback LLMs and those loaded so far.
#[derive(Default)]
struct FallbackState {
    loader: Option<Arc<dyn FallbackLoader>>,
    loaded: Vec<(String, Llm)>,
}

/// A language model ready to be called: configuration, backend (HTTP
/// provider or a fake), retry policy and metrics. Cheap to clone; clones
/// share metrics.
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
}

impl fmt::Debug for Llm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Llm")
            .field("model", &self.inner.config.model)
            .field("usage_id", &self.inner.config.usage_id)
            .finish_non_exhaustive()
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Llm {
    /// An LLM talking to the provider the configuration names (see
    /// [`crate::routing`]). Fails on configurations that cannot be routed.
    /// A router configuration (`llms_for_routing`, see [`crate::router`])
    /// gets its members, each built the same way.
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        if let Some((strategy, specs)) = router::spec_of(&config)? {
            let mut members = Vec::with_capacity(specs.len());
            for (name, member) in specs {
                let llm = Self::new(member).map_err(|e| {
                    LlmError::Config(format!("{}.{name}: {e}", router::MEMBERS_FIELD))
                })?;
                members.push((name, llm));
            }
            return Self::router(config, Router::new(strategy, members)?);
        }
        let backend = HttpBackend::new(&config)?;
        Ok(Self::with_backend(config, Arc::new(backend)))
    }

    /// A router LLM: `config` is the router's own configuration (its
    /// `usage_id`, `router_name`, ...), `router` the members that answer.
    pub fn router(config: LlmConfig, router: Router<Llm>) -> Result<Self, LlmError> {
        let mut llm = Self::with_backend(config, Arc::new(RouterOnly));
        if let Some(inner) = Arc::get_mut(&mut llm.inner) {
            inner.router = Some(Arc::new(router));
        }
        Ok(llm)
    }

    /// The router, when this LLM is one.
    pub fn as_router(&self) -> Option<&Router<Llm>> {
        self.inner.router.as_deref()
    }

    /// The LLMs that make calls and keep metrics: the members (recursively)
    /// for a router, else this LLM.
    pub fn answering_llms(&self) -> Vec<Llm> {
        match &self.inner.router {
            Some(r) => r
                .members()
                .iter()
                .flat_map(|(_, m)| m.answering_llms())
                .collect(),
            None => vec![self.clone()],
        }
    }

    /// An LLM answering through `backend` (a fake in tests, a custom
    /// transport, ...).
    pub fn with_backend(config: LlmConfig, backend: Arc<dyn LlmBackend>) -> Self {
        let metrics = Metrics::new(config.model.clone());
        Self {
            inner: Arc::new(Inner {
                config,
                backend,
                metrics: Mutex::new(metrics),
                retry_listener: RwLock::new(None),
                completion_log_sink: RwLock::new(None),
                fallback: Mutex::new(FallbackState::default()),
                router: None,
            }),
        }
    }

    /// A copy with another `usage_id`, the same backend and fresh metrics
    /// (e.g. a condenser LLM derived from the agent's).
    pub fn with_usage_id(&self, usage_id: impl Into<String>) -> Self {
        let mut config = self.inner.config.clone();
        config.usage_id = usage_id.into();
        let mut copy = Self::with_backend(config, self.inner.backend.clone());
        if let Some(inner) = Arc::get_mut(&mut copy.inner) {
            inner.router = self.inner.router.clone();
        }
        copy.set_fallback_loader(self.inner.fallback.lock().loader.clone());
        copy
    }

    /// Installs what loads the configuration's fallback LLMs (see
    /// [`crate::fallback`]); `None` turns fallback off.
    /// A router passes it to its members.
    pub fn set_fallback_loader(&self, loader: Option<Arc<dyn FallbackLoader>>) {
        if let Some(r) = &self.inner.router {
            for (_, m) in r.members() {
                m.set_fallback_loader(loader.clone());
            }
        }
        let mut state = self.inner.fallback.lock();
        state.loader = loader;
        state.loaded.clear();
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.inner.config
    }

    /// The name under which metrics are accounted.
    pub fn usage_id(&self) -> &str {
        &self.inner.config.usage_id
    }

    /// The configured model name (with provider prefix).
    pub fn model(&self) -> &str {
        &self.inner.config.model
    }

    /// The backend answering calls.
    pub fn backend(&self) -> Arc<dyn LlmBackend> {
        self.inner.backend.clone()
    }

    /// Capability flags of the configured model.
    pub fn features(&self) -> ModelFeatures {
        model_info::features(&self.inner.config)
    }

    /// Whether calls use the OpenAI Responses API.
    pub fn uses_responses_api(&self) -> bool {
        routing::uses_responses_api(&self.inner.config)
    }

    /// Whether image parts are sent to the model.
    pub fn vision_is_active(&self) -> bool {
        model_info::vision_active(&self.inner.config)
    }

    /// Whether prompt-caching markers are sent.
    pub fn is_caching_prompt_active(&self) -> bool {
        model_info::caching_active(&self.inner.config)
    }

    /// A snapshot of the metrics; a router's are its members' together.
    pub fn metrics(&self) -> Metrics {
        if let Some(r) = &self.inner.router {
            let mut all = Metrics::new(self.inner.config.model.clone());
            for (_, m) in r.members() {
                all.merge(&m.metrics());
            }
            return all;
        }
        self.inner.metrics.lock().clone()
    }

    /// Clears the metrics.
    pub fn reset_metrics(&self) {
        *self.inner.metrics.lock() = Metrics::new(self.inner.config.model.clone());
    }

    /// Replaces the metrics (restoring a persisted conversation).
    pub fn restore_metrics(&self, metrics: Metrics) {
        *self.inner.metrics.lock() = metrics;
    }

    /// Sets (or clears) the observer told about every retry.
    pub fn set_retry_listener(&self, listener: Option<RetryListener>) {
        if let Some(r) = &self.inner.router {
            for (_, m) in r.members() {
                m.set_retry_listener(listener.clone());
            }
        }
        *self.inner.retry_listener.write() = listener;
    }

    /// Where this LLM's `log_completions` records go instead of the log
    /// folder (router members too); `None` writes files again.
    pub fn set_completion_log_sink(&self, sink: Option<completion_log::CompletionLogSink>) {
        if let Some(r) = &self.inner.router {
            for (_, m) in r.members() {
                m.set_completion_log_sink(sink.clone());
            }
        }
        *self.inner.completion_log_sink.write() = sink;
    }

    /// Whether this LLM (or a router member) logs its completions.
    pub fn logs_completions(&self) -> bool {
        self.answering_llms()
            .iter()
            .any(|l| completion_log::enabled(l.config()))
    }

    /// Asks the model for the next message. Retries retryable failures with
    /// exponential backoff, applies the per-attempt timeout, streams deltas
    /// to `on_token` when the config enables streaming, and records usage,
    /// cost and latency in the metrics.
    pub async fn completion(
        &self,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        use tracing::Instrument;
        if let Some(r) = &self.inner.router {
            let (_, member) = r.select(&request.messages);
            return Box::pin(member.completion(request, on_token)).await;
        }
        let span = crate::telemetry::llm_span(&self.inner.config, request);
        let started = Instant::now();
        let mut attempts = 0;
        let result = async {
            match self
                .completion_with_retries(request, on_token.clone(), &mut attempts)
                .await
            {
                Ok(resp) => Ok(resp),
                Err(e) => self.fall_back(request, on_token, e).await,
            }
        }
        .instrument(span.clone())
        .await;
        crate::telemetry::record(
            &span,
            &self.inner.config,
            &result,
            attempts,
            started.elapsed(),
        );
        result
    }

    /// The fallback LLM `name` of the strategy, loaded (on a blocking
    /// thread: profiles are files) on first use and kept.
    async fn fallback_llm(&self, name: &str, strategy: &FallbackStrategy) -> Option<Llm> {
        let loader = {
            let state = self.inner.fallback.lock();
            if let Some((_, llm)) = state.loaded.iter().find(|(n, _)| n == name) {
                return Some(llm.clone());
            }
            state.loader.clone()?
        };
        let (profile, strat) = (name.to_string(), strategy.clone());
        let loaded = tokio::task::spawn_blocking(move || loader.load(&profile, &strat))
            .await
            .unwrap_or_else(|e| Err(e.into()));
        match loaded {
            Ok(llm) => {
                let mut state = self.inner.fallback.lock();
                if !state.loaded.iter().any(|(n, _)| n == name) {
                    state.loaded.push((name.to_string(), llm.clone()));
                }
                Some(llm)
            }
            Err(e) => {
                tracing::error!(profile = name, error = %e, "fallback LLM profile not loaded");
                None
            }
        }
    }

    /// Whether a fallback loader is installed.
    pub fn has_fallback_loader(&self) -> bool {
        self.inner.fallback.lock().loader.is_some()
    }

    /// After the primary failed with `error`: the strategy's LLMs in order
    /// (each with its own retries, none falling back further); the first
    /// answer is returned and its cost recorded here too. `error` again
    /// when none answers.
    async fn fall_back(
        &self,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
        error: LlmError,
    ) -> Result<LlmResponse, LlmError> {
        let Some(strategy) = self.inner.config.fallback_strategy.clone() else {
            return Err(error);
        };
        if !should_fallback(&error) || self.inner.fallback.lock().loader.is_none() {
            return Err(error);
        }
        let total = strategy.fallback_llms.len();
        for (i, name) in strategy.fallback_llms.iter().enumerate() {
            let Some(fallback) = self.fallback_llm(name, &strategy).await else {
                continue;
            };
            tracing::warn!(
                primary = %self.inner.config.model,
                error = %error,
                fallback = %fallback.model(),
                "primary LLM failed; trying fallback {}/{total}",
                i + 1
            );
            let before = fallback.metrics();
            let mut fallback_attempts = 0;
            match fallback
                .completion_with_retries(request, on_token.clone(), &mut fallback_attempts)
                .await
            {
                Ok(resp) => {
                    let diff = metrics_since(&before, &fallback.metrics());
                    self.inner.metrics.lock().merge(&diff);
                    tracing::info!(fallback = %fallback.model(), "fallback LLM answered");
                    return Ok(resp);
                }
                Err(e) if is_budget_exceeded(&e) => return Err(e),
                Err(e) => {
                    tracing::warn!(fallback = %fallback.model(), error = %e, "fallback LLM failed");
                }
            }
        }
        tracing::error!(primary = %self.inner.config.model, "every fallback LLM failed");
        Err(error)
    }

    /// One call with the retry policy, no fallback and no span; `attempts`
    /// counts the calls made.
    async fn completion_with_retries(
        &self,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
        attempts: &mut u32,
    ) -> Result<LlmResponse, LlmError> {
        let base = &self.inner.config;
        let non_native = !base.native_tool_calling && !request.tools.is_empty();
        let (mut config, prepared): (Cow<'_, LlmConfig>, Cow<'_, LlmRequest>) = if non_native {
            (
                Cow::Owned(with_stop_words(base)),
                Cow::Owned(LlmRequest {
                    messages: non_native::prepare_messages(&request.messages, &request.tools),
                    tools: Vec::new(),
                    conversation_id: request.conversation_id.clone(),
                }),
            )
        } else {
            (Cow::Borrowed(base), Cow::Borrowed(request))
        };
        let max_attempts = retry::max_attempts(base);
        let timeout = secs(base.timeout);
        let mut attempt: u32 = 0;
        let mut cache_fallback_used = false;
        loop {
            attempt += 1;
            *attempts = attempt;
            let started = Instant::now();
            let log_ctx = completion_log::enabled(base).then(|| {
                completion_log::request_context(
                    &config,
                    &prepared,
                    model_info::context_window(base),
                )
            });
            let call = self
                .inner
                .backend
                .complete(&config, &prepared, on_token.clone());
            let result = match timeout {
                Some(t) => match tokio::time::timeout(t, call).await {
                    Ok(r) => r,
                    Err(_) => Err(LlmError::Timeout(format!(
                        "LLM hard timeout after {} seconds",
                        t.as_secs_f64()
                    ))),
                },
                None => call.await,
            };
            let mut log_ctx = log_ctx;
            if let Err(e) = &result
                && let Some(ctx) = log_ctx.take()
            {
                let latency = started.elapsed().as_secs_f64();
                let log = completion_log::failure(base, ctx, e, latency);
                self.log_completion(log).await;
            }
            match result {
                Ok(mut resp) => {
                    let latency = started.elapsed().as_secs_f64();
                    if non_native {
                        resp.message = non_native::parse_reply(resp.message, &request.tools);
                    }
                    let cost = self.record(&mut resp, latency);
                    if let Some(ctx) = log_ctx {
                        let log = completion_log::success(base, ctx, &resp, cost, latency);
                        self.log_completion(log).await;
                    }
                    return Ok(resp);
                }
                Err(e)
                    if e.is_prompt_cache_too_small()
                        && !cache_fallback_used
                        && model_info::caching_active(&config) =>
                {
                    cache_fallback_used = true;
                    let mut c = config.into_owned();
                    c.caching_prompt = false;
                    config = Cow::Owned(c);
                    attempt -= 1;
                }
                Err(e) if retry::should_retry(&e) && attempt < max_attempts => {
                    let wait = retry::wait_for(base, attempt, &e);
                    tracing::warn!(
                        usage_id = %base.usage_id,
                        attempt,
                        max_attempts,
                        wait_s = wait.as_secs_f64(),
                        error = %e,
                        "LLM call failed; retrying"
                    );
                    let listener = self.inner.retry_listener.read().clone();
                    if let Some(l) = listener {
                        l(&RetryEvent {
                            attempt,
                            max_attempts,
                            error: e,
                            wait,
                        });
                    }
                    tokio::time::sleep(wait).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands a completion log to the sink, or writes it to the folder.
    async fn log_completion(&self, log: completion_log::CompletionLog) {
        let sink = self.inner.completion_log_sink.read().clone();
        completion_log::deliver(&self.inner.config, sink.as_ref(), log).await;
    }

    /// Fills in usage fields a backend left empty and records the call;
    /// returns its cost.
    fn record(&self, resp: &mut LlmResponse, latency: f64) -> f64 {
        let config = &self.inner.config;
        let u = &mut resp.usage;
        if u.model.is_empty() {
            u.model = config.model.clone();
        }
        if u.context_window == 0 {
            u.context_window = model_info::context_window(config);
        }
        if u.response_id.is_empty() {
            u.response_id = resp.id.clone();
        }
        u.per_turn_token = u.prompt_tokens + u.completion_tokens;
        let cost = model_info::cost(config, u);
        let mut m = self.inner.metrics.lock();
        if u.per_turn_token > 0 {
            m.record(u.clone(), cost, latency, now_unix());
        } else {
            // No token counts: account latency (and any cost) only.
            m.accumulated_cost += cost;
            let model = m.model_name.clone();
            m.response_latencies.push(ResponseLatency {
                model,
                latency,
                response_id: resp.id.clone(),
            });
        }
        cost
    }
}

/// The backend of a router LLM: never called, its members answer.
impl RouteMember for Llm {
    fn config(&self) -> &LlmConfig {
        Llm::config(self)
    }
    fn model(&self) -> &str {
        Llm::model(self)
    }
}

struct RouterOnly;

#[async_trait::async_trait]
impl LlmBackend for RouterOnly {
    async fn complete(
        &self,
        _config: &LlmConfig,
        _request: &LlmRequest,
        _on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        Err(LlmError::Config(
            "a router LLM answers through its members".into(),
        ))
    }
}

/// For prompt-described tools: ask the provider to stop after a call.
fn with_stop_words(config: &LlmConfig) -> LlmConfig {
    let mut c = config.clone();
    if !model_info::features(config).supports_stop_words {
        return c;
    }
    let key = match routing::resolve(config).map(|r| r.kind) {
        Ok(ApiKind::Chat) => "stop",
        Ok(ApiKind::Anthropic) => "stop_sequences",
        _ => return c,
    };
    if !matches!(c.litellm_extra_body.get(key), Some(Value::Array(_))) {
        c.litellm_extra_body
            .insert(key.into(), json!(non_native::STOP_WORDS));
    }
    c
}

#[cfg(test)]
#[path = "llm_tests.rs"]
mod tests;
