use super::*;
use crate::types::ToolSchema;
use async_trait::async_trait;
use openhands_wire::message::{Message, Role};
use openhands_wire::metrics::TokenUsage;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Fails `fail` times with `error`, then answers `text`; records the
/// requests it saw.
struct Flaky {
    fail: u32,
    error: LlmError,
    calls: AtomicU32,
    text: String,
    seen: Mutex<Vec<(LlmConfig, LlmRequest)>>,
    delay: Duration,
}

impl Flaky {
    fn new(fail: u32, error: LlmError, text: &str) -> Arc<Self> {
        Arc::new(Self {
            fail,
            error,
            calls: AtomicU32::new(0),
            text: text.into(),
            seen: Mutex::new(Vec::new()),
            delay: Duration::ZERO,
        })
    }
}

#[async_trait]
impl LlmBackend for Flaky {
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        _on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        self.seen.lock().push((config.clone(), request.clone()));
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if n < self.fail {
            return Err(self.error.clone());
        }
        Ok(LlmResponse {
            id: format!("r{n}"),
            message: Message::assistant(self.text.clone()),
            usage: TokenUsage {
                prompt_tokens: 100,
                completion_tokens: 10,
                cache_read_tokens: 20,
                ..TokenUsage::default()
            },
            finish_reason: Some("stop".into()),
        })
    }
}

fn fast_config() -> LlmConfig {
    let mut c = LlmConfig::new("openai/mock-model");
    c.retry_multiplier = 0.001;
    c.retry_min_wait = 0.001;
    c.retry_max_wait = 0.004;
    c.usage_id = "agent".into();
    c
}

fn req() -> LlmRequest {
    LlmRequest {
        messages: vec![Message::user("hi")],
        tools: vec![],
        conversation_id: None,
    }
}

fn listen(llm: &Llm) -> Arc<Mutex<Vec<(u32, u32, Duration)>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e2 = events.clone();
    llm.set_retry_listener(Some(Arc::new(move |ev: &RetryEvent| {
        e2.lock().push((ev.attempt, ev.max_attempts, ev.wait));
    })));
    events
}

#[tokio::test]
async fn retries_until_success_with_exponential_backoff() {
    let backend = Flaky::new(3, LlmError::ServiceUnavailable("503".into()), "ok");
    let llm = Llm::with_backend(fast_config(), backend.clone());
    let events = listen(&llm);
    let r = llm.completion(&req(), None).await.unwrap();
    assert_eq!(r.message.text(), "ok");
    assert_eq!(backend.calls.load(Ordering::SeqCst), 4);
    let ev = events.lock().clone();
    assert_eq!(
        ev,
        vec![
            (1, 5, Duration::from_millis(1)),
            (2, 5, Duration::from_millis(2)),
            (3, 5, Duration::from_millis(4)),
        ]
    );
}

#[tokio::test]
async fn gives_up_after_num_retries_attempts() {
    let backend = Flaky::new(100, LlmError::Timeout("slow".into()), "never");
    let mut c = fast_config();
    c.num_retries = 3;
    let llm = Llm::with_backend(c, backend.clone());
    let err = llm.completion(&req(), None).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)));
    assert_eq!(backend.calls.load(Ordering::SeqCst), 3);
    assert!(llm.metrics().token_usages.is_empty());
}

#[tokio::test]
async fn non_retryable_errors_fail_at_once() {
    for e in [
        LlmError::Authentication("bad".into()),
        LlmError::BadRequest("bad".into()),
        LlmError::ContextWindowExceeded("long".into()),
        LlmError::RateLimit {
            message: "insufficient_quota".into(),
            retry_after: None,
        },
    ] {
        let backend = Flaky::new(100, e, "never");
        let llm = Llm::with_backend(fast_config(), backend.clone());
        assert!(llm.completion(&req(), None).await.is_err());
        assert_eq!(backend.calls.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn retry_after_waits_at_least_that_long_capped() {
    let backend = Flaky::new(
        1,
        LlmError::RateLimit {
            message: "slow".into(),
            retry_after: Some(Duration::from_millis(3)),
        },
        "ok",
    );
    let llm = Llm::with_backend(fast_config(), backend);
    let events = listen(&llm);
    llm.completion(&req(), None).await.unwrap();
    assert_eq!(events.lock()[0].2, Duration::from_millis(3));
}

#[tokio::test]
async fn attempt_timeout_is_a_retryable_timeout() {
    let backend = Arc::new(Flaky {
        delay: Duration::from_millis(200),
        ..Arc::into_inner(Flaky::new(0, LlmError::Cancelled, "late")).unwrap()
    });
    let mut c = fast_config();
    c.timeout = Some(0.01);
    c.num_retries = 2;
    let llm = Llm::with_backend(c, backend.clone());
    let err = llm.completion(&req(), None).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)), "{err:?}");
    assert_eq!(backend.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn metrics_accumulate_usage_cost_and_latency() {
    let backend = Flaky::new(0, LlmError::Cancelled, "ok");
    let mut c = fast_config();
    c.input_cost_per_token = Some(0.001);
    c.output_cost_per_token = Some(0.002);
    c.max_input_tokens = Some(128_000);
    let llm = Llm::with_backend(c, backend);
    let r1 = llm.completion(&req(), None).await.unwrap();
    assert_eq!(r1.usage.model, "openai/mock-model");
    assert_eq!(r1.usage.context_window, 128_000);
    assert_eq!(r1.usage.response_id, "r0");
    llm.completion(&req(), None).await.unwrap();
    let m = llm.metrics();
    assert_eq!(m.model_name, "openai/mock-model");
    assert!((m.accumulated_cost - 0.24).abs() < 1e-9);
    assert_eq!(m.costs.len(), 2);
    assert_eq!(m.response_latencies.len(), 2);
    assert_eq!(m.token_usages.len(), 2);
    let acc = m.accumulated_token_usage.clone().unwrap();
    assert_eq!(acc.prompt_tokens, 200);
    assert_eq!(acc.completion_tokens, 20);
    assert_eq!(acc.cache_read_tokens, 40);
    assert_eq!(acc.per_turn_token, 110);
    assert_eq!(acc.context_window, 128_000);
    // Clones share metrics; a derived usage id starts fresh.
    assert_eq!(llm.clone().metrics().token_usages.len(), 2);
    let condenser = llm.with_usage_id("condenser");
    assert_eq!(condenser.usage_id(), "condenser");
    assert!(condenser.metrics().token_usages.is_empty());
    llm.reset_metrics();
    assert_eq!(llm.metrics().accumulated_cost, 0.0);
    llm.restore_metrics(m.clone());
    assert_eq!(llm.metrics(), m);
}

#[tokio::test]
async fn non_native_round_trip_through_backend() {
    let backend = Flaky::new(
        0,
        LlmError::Cancelled,
        "Sure.\n<function=terminal>\n<parameter=command>ls</parameter>\n",
    );
    let mut c = fast_config();
    c.native_tool_calling = false;
    let llm = Llm::with_backend(c, backend.clone());
    let request = LlmRequest {
        messages: vec![Message::system("sys"), Message::user("list")],
        tools: vec![ToolSchema {
            name: "terminal".into(),
            description: "Run".into(),
            parameters: json!({"type":"object","properties":{"command":{"type":"string"}}}),
        }],
        conversation_id: Some("c".into()),
    };
    let r = llm.completion(&request, None).await.unwrap();
    assert_eq!(r.message.text(), "Sure.");
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls[0].name, "terminal");
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    let seen = backend.seen.lock();
    let (cfg, sent) = &seen[0];
    assert!(sent.tools.is_empty());
    assert_eq!(sent.messages[0].role, Role::System);
    assert!(sent.messages[0].text().contains("### terminal"));
    assert_eq!(cfg.litellm_extra_body["stop"], json!(["</function"]));
}

#[tokio::test]
async fn prompt_cache_too_small_retries_once_without_markers() {
    let backend = Flaky::new(
        1,
        LlmError::BadRequest("The minimum token count to start caching is 4096.".into()),
        "ok",
    );
    let mut c = fast_config();
    c.model = "litellm_proxy/claude-sonnet-4-5".into();
    c.num_retries = 1;
    let llm = Llm::with_backend(c, backend.clone());
    llm.completion(&req(), None).await.unwrap();
    let seen = backend.seen.lock();
    assert!(seen[0].0.caching_prompt);
    assert!(!seen[1].0.caching_prompt);
}

#[test]
fn new_rejects_unroutable_configs_and_accepts_routable_ones() {
    assert!(matches!(
        Llm::new(LlmConfig::new("litellm_proxy/x")),
        Err(LlmError::Config(_))
    ));
    let llm = Llm::new(LlmConfig::new("anthropic/claude-sonnet-4-5")).unwrap();
    assert!(llm.is_caching_prompt_active());
    assert!(!llm.uses_responses_api());
    assert!(
        Llm::new(LlmConfig::new("gpt-5"))
            .unwrap()
            .uses_responses_api()
    );
    assert!(format!("{llm:?}").contains("claude"));
}

/// Loads fallback LLMs from a fixed table; counts loads.
struct Table {
    llms: Vec<(String, Llm)>,
    loads: AtomicU32,
}

impl FallbackLoader for Table {
    fn load(&self, name: &str, _strategy: &FallbackStrategy) -> Result<Llm, FallbackLoadError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.llms
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l.clone())
            .ok_or_else(|| FallbackLoadError::NotFound(name.to_string()))
    }
}

fn with_fallbacks(names: &[&str]) -> LlmConfig {
    let mut c = fast_config();
    c.num_retries = 1;
    c.fallback_strategy = Some(FallbackStrategy {
        fallback_llms: names.iter().map(|s| s.to_string()).collect(),
        profile_store_dir: None,
    });
    c
}

fn priced(model: &str) -> LlmConfig {
    let mut c = fast_config();
    c.model = model.into();
    c.num_retries = 0;
    c.input_cost_per_token = Some(0.01);
    c.output_cost_per_token = Some(0.0);
    c
}

#[tokio::test]
async fn transient_failures_fall_back_in_order_and_costs_roll_up() {
    let primary = Flaky::new(
        u32::MAX,
        LlmError::ServiceUnavailable("500".into()),
        "never",
    );
    let broken = Flaky::new(u32::MAX, LlmError::Timeout("slow".into()), "never");
    let good = Flaky::new(0, LlmError::Timeout("x".into()), "from the fallback");
    let llm = Llm::with_backend(
        with_fallbacks(&["missing", "broken", "good"]),
        primary.clone(),
    );
    let table = Arc::new(Table {
        llms: vec![
            (
                "broken".into(),
                Llm::with_backend(priced("openai/broken"), broken.clone()),
            ),
            (
                "good".into(),
                Llm::with_backend(priced("openai/good"), good.clone()),
            ),
        ],
        loads: AtomicU32::new(0),
    });
    llm.set_fallback_loader(Some(table.clone()));

    let resp = llm.completion(&req(), None).await.unwrap();
    assert_eq!(resp.message.text(), "from the fallback");
    // The primary had its attempts (num_retries = 1: one); the missing
    // profile was skipped.
    assert_eq!(primary.calls.load(Ordering::SeqCst), 1);
    assert_eq!(broken.calls.load(Ordering::SeqCst), 1);
    // The fallback's cost (100 prompt tokens at 0.01, completions free) is
    // on the primary's metrics.
    let m = llm.metrics();
    assert_eq!(m.response_latencies.len(), 1);
    assert!(
        (m.accumulated_cost - 1.0).abs() < 1e-9,
        "{}",
        m.accumulated_cost
    );

    // The next call starts with the primary again; loaded profiles are kept.
    let loads = table.loads.load(Ordering::SeqCst);
    llm.completion(&req(), None).await.unwrap();
    assert_eq!(primary.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        table.loads.load(Ordering::SeqCst),
        loads + 1,
        "only the missing one is retried"
    );
}

#[tokio::test]
async fn errors_a_fallback_cannot_fix_are_returned_at_once() {
    let primary = Flaky::new(
        u32::MAX,
        LlmError::Authentication("bad key".into()),
        "never",
    );
    let good = Flaky::new(0, LlmError::Timeout("x".into()), "ok");
    let llm = Llm::with_backend(with_fallbacks(&["good"]), primary.clone());
    llm.set_fallback_loader(Some(Arc::new(Table {
        llms: vec![(
            "good".into(),
            Llm::with_backend(priced("openai/good"), good.clone()),
        )],
        loads: AtomicU32::new(0),
    })));
    let err = llm.completion(&req(), None).await.unwrap_err();
    assert!(matches!(err, LlmError::Authentication(_)));
    assert_eq!(good.calls.load(Ordering::SeqCst), 0);

    // Every fallback failing: the primary's error comes back.
    let primary = Flaky::new(
        u32::MAX,
        LlmError::ServiceUnavailable("503".into()),
        "never",
    );
    let bad = Flaky::new(u32::MAX, LlmError::Timeout("slow".into()), "never");
    let llm = Llm::with_backend(with_fallbacks(&["bad"]), primary);
    llm.set_fallback_loader(Some(Arc::new(Table {
        llms: vec![("bad".into(), Llm::with_backend(priced("openai/bad"), bad))],
        loads: AtomicU32::new(0),
    })));
    let err = llm.completion(&req(), None).await.unwrap_err();
    assert!(matches!(err, LlmError::ServiceUnavailable(_)), "{err}");
}

#[tokio::test]
async fn log_completions_writes_one_file_per_attempt_or_feeds_the_sink() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = fast_config();
    config.extra.insert("log_completions".into(), json!(true));
    config.extra.insert(
        "log_completions_folder".into(),
        json!(dir.path().join("logs").to_string_lossy()),
    );
    config.input_cost_per_token = Some(0.001);
    config.output_cost_per_token = Some(0.002);
    let backend = Flaky::new(1, LlmError::Timeout("slow".into()), "hello");
    let llm = Llm::with_backend(config.clone(), backend);
    assert!(llm.logs_completions());
    llm.completion(&req(), None).await.unwrap();
    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let prefix = config.model.replace('/', "__");
    let (errors, oks): (Vec<_>, Vec<_>) = files.iter().partition(|p| {
        p.file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-error.json")
    });
    assert_eq!((errors.len(), oks.len()), (1, 1));
    let ok: Value = serde_json::from_slice(&std::fs::read(oks[0]).unwrap()).unwrap();
    assert!(
        oks[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&prefix)
    );
    assert_eq!(ok["messages"][0]["role"], "user");
    assert_eq!(ok["response"]["choices"][0]["message"]["content"], "hello");
    assert!((ok["cost"].as_f64().unwrap() - 0.12).abs() < 1e-9);
    assert_eq!(ok["usage_summary"]["prompt_tokens"], 100);
    assert!(ok["latency_sec"].is_number() && ok["timestamp"].is_number());
    let err: Value = serde_json::from_slice(&std::fs::read(errors[0]).unwrap()).unwrap();
    assert_eq!(
        err["error"]["type"],
        LlmError::Timeout(String::new()).code()
    );

    // A sink receives the records instead of the folder.
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    let llm = Llm::with_backend(
        config.clone(),
        Flaky::new(0, LlmError::Timeout(String::new()), "x"),
    );
    llm.set_completion_log_sink(Some(Arc::new(move |log| seen.lock().push(log))));
    llm.completion(&req(), None).await.unwrap();
    let logs = got.lock().clone();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].usage_id, config.usage_id);
    assert_eq!(logs[0].model_name, config.model);
    assert!(logs[0].log_data.contains("\"response\""));
    assert_eq!(
        std::fs::read_dir(dir.path().join("logs")).unwrap().count(),
        2
    );
}
