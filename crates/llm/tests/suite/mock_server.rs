//! End-to-end tests of the HTTP providers against the scripted mock LLM
//! server of `openhands-testkit` on 127.0.0.1: every protocol, plain and
//! streamed, errors and retries, timeouts, metrics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_llm::{Llm, LlmError, LlmRequest, StreamDelta, TokenCallback, ToolSchema};
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, ScriptUsage, Turn, TurnError};
use openhands_wire::LlmConfig;
use openhands_wire::llm_config::ApiMode;
use openhands_wire::message::{Message, Role};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;

async fn start(script: Script) -> MockLlmHandle {
    MockLlmServer::start(script, 0).await.unwrap()
}

fn config(model: &str, h: &MockLlmHandle) -> LlmConfig {
    let mut c = LlmConfig::new(model);
    c.base_url = Some(h.base_url());
    c.api_key = Some("sk-test".into());
    c.retry_multiplier = 0.001;
    c.retry_min_wait = 0.001;
    c.retry_max_wait = 0.002;
    c.timeout = Some(20.0);
    c.usage_id = "agent".into();
    c
}

fn responses(mut c: LlmConfig) -> LlmConfig {
    c.api_mode = ApiMode::Responses;
    c
}

fn streaming(mut c: LlmConfig) -> LlmConfig {
    c.stream = true;
    c
}

fn tool() -> ToolSchema {
    ToolSchema {
        name: "terminal".into(),
        description: "Run a shell command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    }
}

fn request(text: &str) -> LlmRequest {
    LlmRequest {
        messages: vec![
            Message::system("You are a test agent."),
            Message::user(text),
        ],
        tools: vec![tool()],
        conversation_id: Some("conv-1".into()),
    }
}

fn collector() -> (TokenCallback, Arc<Mutex<Vec<StreamDelta>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (Arc::new(move |d| s.lock().push(d)), seen)
}

fn joined(seen: &Mutex<Vec<StreamDelta>>) -> (String, String) {
    let v = seen.lock();
    let content = v.iter().filter_map(|d| d.content.clone()).collect();
    let reasoning = v
        .iter()
        .filter_map(|d| d.reasoning_content.clone())
        .collect();
    (content, reasoning)
}

const MODELS: [(&str, bool); 3] = [
    ("openai/mock-model", false),
    ("openai/mock-model", true),
    ("anthropic/mock-model", false),
];

fn configs(h: &MockLlmHandle) -> Vec<LlmConfig> {
    MODELS
        .iter()
        .map(|(m, r)| {
            let c = config(m, h);
            if *r { responses(c) } else { c }
        })
        .collect()
}

#[tokio::test]
async fn every_protocol_plain_tool_call_then_text() {
    let h = start(Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"})),
        Turn::text("All done.").with_usage(ScriptUsage {
            prompt_tokens: 1000,
            completion_tokens: 20,
            cache_read_tokens: 600,
            cache_write_tokens: 50,
            reasoning_tokens: 5,
        }),
    ]))
    .await;
    for c in configs(&h) {
        let llm = Llm::new(c.clone()).unwrap();
        let mut req = request("list files");
        let r1 = llm.completion(&req, None).await.unwrap();
        let calls = r1.message.tool_calls.clone().expect("tool call");
        assert_eq!(calls.len(), 1, "{}", c.model);
        assert_eq!(calls[0].name, "terminal");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args, json!({"command": "ls"}));

        req.messages.push(r1.message.clone());
        req.messages.push(Message::tool_result(
            calls[0].id.clone(),
            "terminal",
            vec![openhands_wire::Content::text("a.txt")],
        ));
        let r2 = llm.completion(&req, None).await.unwrap();
        assert_eq!(
            r2.message.text(),
            "All done.",
            "{} {:?}",
            c.model,
            c.api_mode
        );
        assert!(!r2.message.has_tool_calls());
        assert_eq!(r2.usage.prompt_tokens, 1000, "{}", c.model);
        assert_eq!(r2.usage.completion_tokens, 20);
        assert_eq!(r2.usage.cache_read_tokens, 600);
        let m = llm.metrics();
        assert_eq!(m.token_usages.len(), 2);
        assert_eq!(m.response_latencies.len(), 2);
        assert_eq!(m.accumulated_token_usage.unwrap().prompt_tokens, 1100);
    }
}

#[tokio::test]
async fn chat_request_carries_reference_fields_and_headers() {
    let h = start(Script::from_turns([Turn::text("hi")])).await;
    let llm = Llm::new(config("openai/mock-model", &h)).unwrap();
    llm.completion(&request("hello"), None).await.unwrap();
    let reqs = h.completion_requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.header("x-litellm-session-id"), Some("conv-1"));
    assert_eq!(r.body["model"], "mock-model");
    assert_eq!(r.body["prompt_cache_key"], "conv-1");
    assert_eq!(r.body["reasoning_effort"], "high");
    assert_eq!(r.body["messages"][0]["role"], "system");
    assert_eq!(r.body["tools"][0]["function"]["name"], "terminal");
    assert!(r.body.get("stream").is_none());

    let h2 = start(Script::from_turns([Turn::text("hi")])).await;
    let llm = Llm::new(config("anthropic/mock-model", &h2)).unwrap();
    llm.completion(&request("hello"), None).await.unwrap();
    let r = &h2.completion_requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.body["system"][0]["text"], "You are a test agent.");
    assert_eq!(r.body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn every_protocol_streams_ordered_deltas_and_parallel_calls() {
    let h = start(Script::from_turns([Turn::text(
        "The quick brown fox jumps over the lazy dog.",
    )
    .with_reasoning("Let me think about foxes.")
    .with_tool_call("terminal", json!({"command": "ls"}))
    .with_tool_call("terminal", json!({"command": "pwd"}))
    .with_chunk_chars(5)]))
    .await;
    for c in configs(&h) {
        let llm = Llm::new(streaming(c.clone())).unwrap();
        let (cb, seen) = collector();
        let r = llm.completion(&request("go"), Some(cb)).await.unwrap();
        let (content, reasoning) = joined(&seen);
        assert_eq!(
            content, "The quick brown fox jumps over the lazy dog.",
            "{}",
            c.model
        );
        assert_eq!(
            reasoning, "Let me think about foxes.",
            "{} {:?}",
            c.model, c.api_mode
        );
        assert!(seen.lock().len() > 4);
        assert_eq!(
            r.message.text(),
            "The quick brown fox jumps over the lazy dog."
        );
        let calls = r.message.tool_calls.unwrap();
        assert_eq!(calls.len(), 2, "{}", c.model);
        assert_eq!(calls[1].arguments, r#"{"command":"pwd"}"#);
        assert_ne!(calls[0].id, calls[1].id);
        let body = h.completion_requests().last().unwrap().body.clone();
        assert_eq!(body["stream"], true);
    }
}

#[tokio::test]
async fn streaming_without_callback_falls_back_to_plain() {
    let h = start(Script::from_turns([Turn::text("plain")])).await;
    let llm = Llm::new(streaming(config("openai/mock-model", &h))).unwrap();
    let r = llm.completion(&request("x"), None).await.unwrap();
    assert_eq!(r.message.text(), "plain");
    assert!(h.completion_requests()[0].body.get("stream").is_none());
}

#[tokio::test]
async fn transient_errors_are_retried_until_success() {
    let turn = Turn::text("worked")
        .with_error(TurnError::status(503))
        .with_fail_times(2);
    let h = start(Script::from_turns([turn])).await;
    for c in configs(&h) {
        h.clear_requests();
        let llm = Llm::new(c.clone()).unwrap();
        let mut req = request("retry me");
        // A distinct conversation per protocol so fail_times counts afresh.
        req.conversation_id = Some(format!("conv-{}-{:?}", c.model, c.api_mode));
        let r = llm.completion(&req, None).await.unwrap();
        assert_eq!(r.message.text(), "worked");
        assert_eq!(h.completion_requests().len(), 3, "{}", c.model);
    }
}

#[tokio::test]
async fn errors_map_to_classes_with_the_right_attempt_counts() {
    type Check = fn(&LlmError) -> bool;
    let cases: Vec<(Turn, Check, usize)> = vec![
        (
            Turn::error(401),
            |e| matches!(e, LlmError::Authentication(_)),
            1,
        ),
        (
            Turn::error(400),
            |e| matches!(e, LlmError::BadRequest(_)),
            1,
        ),
        (
            Turn::default().with_error(TurnError::context_window()),
            |e| matches!(e, LlmError::ContextWindowExceeded(_)),
            1,
        ),
        (
            Turn::error(500),
            |e| matches!(e, LlmError::ServiceUnavailable(_)),
            3,
        ),
        (
            Turn::error(429),
            |e| matches!(e, LlmError::RateLimit { .. }),
            3,
        ),
        (
            Turn::raw_body("this is not json"),
            |e| matches!(e, LlmError::MalformedResponse(_)),
            3,
        ),
    ];
    for (turn, check, attempts) in cases {
        let h = start(Script::from_turns([turn])).await;
        for c in configs(&h) {
            h.clear_requests();
            let mut c = c;
            c.num_retries = 3;
            let err = Llm::new(c.clone())
                .unwrap()
                .completion(&request("x"), None)
                .await
                .unwrap_err();
            assert!(check(&err), "{} {:?}: {err:?}", c.model, c.api_mode);
            assert_eq!(
                h.completion_requests().len(),
                attempts,
                "{} {err:?}",
                c.model
            );
        }
    }
}

#[tokio::test]
async fn rate_limit_retry_after_is_read() {
    let mut e = TurnError::status(429);
    e.retry_after = Some(1);
    let h = start(Script::from_turns([Turn::default().with_error(e)])).await;
    let mut c = config("openai/mock-model", &h);
    c.num_retries = 1;
    let err = Llm::new(c)
        .unwrap()
        .completion(&request("x"), None)
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(1)));
}

#[tokio::test]
async fn cut_streams_are_typed_errors_and_retried() {
    let h = start(Script::from_turns([Turn::text(
        "a long enough reply to cut",
    )
    .with_cut_stream()]))
    .await;
    for c in configs(&h) {
        h.clear_requests();
        let mut c = streaming(c);
        c.num_retries = 2;
        let (cb, _) = collector();
        let err = Llm::new(c.clone())
            .unwrap()
            .completion(&request("x"), Some(cb))
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::MalformedResponse(_)),
            "{} {err:?}",
            c.model
        );
        assert_eq!(h.completion_requests().len(), 2);
    }
}

#[tokio::test]
async fn invalid_tool_arguments_are_kept_raw() {
    let h = start(Script::from_turns([
        Turn::default().with_raw_tool_call("terminal", "{\"command\": \"ls")
    ]))
    .await;
    for c in configs(&h) {
        for stream in [false, true] {
            let c = if stream {
                streaming(c.clone())
            } else {
                c.clone()
            };
            let (cb, _) = collector();
            let r = Llm::new(c.clone())
                .unwrap()
                .completion(&request("x"), Some(cb))
                .await
                .unwrap();
            let calls = r.message.tool_calls.unwrap();
            assert_eq!(
                calls[0].arguments, "{\"command\": \"ls",
                "{} stream={stream}",
                c.model
            );
        }
    }
}

#[tokio::test]
async fn hard_and_idle_timeouts() {
    let h = start(Script::from_turns(
        [Turn::text("late").with_delay_ms(2_000)],
    ))
    .await;
    let mut c = config("openai/mock-model", &h);
    c.timeout = Some(0.2);
    c.num_retries = 1;
    let err = Llm::new(c.clone())
        .unwrap()
        .completion(&request("x"), None)
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)), "{err:?}");

    // Streams: headers arrive at once, the first event after the delay.
    let mut s = streaming(c);
    s.timeout = Some(20.0);
    s.stream_idle_timeout = Some(0.2);
    let (cb, _) = collector();
    let err = Llm::new(s)
        .unwrap()
        .completion(&request("x"), Some(cb))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout(ref m) if m.contains("idle")),
        "{err:?}"
    );
}

#[tokio::test]
async fn reasoning_is_parsed_per_protocol() {
    let h = start(Script::from_turns([
        Turn::text("answer").with_reasoning("because")
    ]))
    .await;
    let chat = Llm::new(config("openai/mock-model", &h)).unwrap();
    let r = chat.completion(&request("q"), None).await.unwrap();
    assert_eq!(r.message.reasoning_content.as_deref(), Some("because"));
    let resp = Llm::new(responses(config("openai/mock-model", &h))).unwrap();
    let r = resp.completion(&request("q"), None).await.unwrap();
    let item = r.message.responses_reasoning_item.unwrap();
    assert_eq!(item.summary.join(""), "because");
    let anth = Llm::new(config("anthropic/mock-model", &h)).unwrap();
    let r = anth.completion(&request("q"), None).await.unwrap();
    assert_eq!(r.message.thinking_blocks.len(), 1);
    assert_eq!(r.message.reasoning_content.as_deref(), Some("because"));
}

#[tokio::test]
async fn responses_replay_reasoning_and_function_calls() {
    let h = start(Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"})).with_reasoning("plan"),
        Turn::text("done"),
    ]))
    .await;
    let llm = Llm::new(responses(config("openai/mock-model", &h))).unwrap();
    let mut req = request("go");
    let r1 = llm.completion(&req, None).await.unwrap();
    let call = r1.message.tool_calls.clone().unwrap().remove(0);
    req.messages.push(r1.message.clone());
    req.messages.push(Message::tool_result(
        call.id.clone(),
        "terminal",
        vec![openhands_wire::Content::text("out")],
    ));
    let r2 = llm.completion(&req, None).await.unwrap();
    assert_eq!(r2.message.text(), "done");
    let body = &h.completion_requests()[1].body;
    let kinds: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(body["input"][3]["call_id"], call.id);
    assert_eq!(body["instructions"], "You are a test agent.");
}

#[tokio::test]
async fn non_native_tool_calling_against_the_mock() {
    let h = start(Script::from_turns([
        Turn::text(
            "I'll look.\n<function=terminal>\n<parameter=command>ls -la</parameter>\n</function>",
        ),
        Turn::text("Finished."),
    ]))
    .await;
    let mut c = config("openai/mock-model", &h);
    c.native_tool_calling = false;
    let llm = Llm::new(c).unwrap();
    let mut req = request("go");
    let r1 = llm.completion(&req, None).await.unwrap();
    assert_eq!(r1.message.text(), "I'll look.");
    let call = r1.message.tool_calls.clone().unwrap().remove(0);
    assert_eq!(call.arguments, r#"{"command":"ls -la"}"#);
    let sent = &h.completion_requests()[0].body;
    assert!(sent.get("tools").is_none());
    assert_eq!(sent["stop"], json!(["</function"]));
    assert!(
        sent["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("<function=TOOL_NAME>")
    );

    req.messages.push(r1.message);
    req.messages.push(Message::tool_result(
        call.id,
        "terminal",
        vec![openhands_wire::Content::text("a.txt")],
    ));
    let r2 = llm.completion(&req, None).await.unwrap();
    assert_eq!(r2.message.text(), "Finished.");
    let sent = &h.completion_requests()[1].body;
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "assistant");
    assert!(msgs[2].get("tool_calls").is_none());
    assert_eq!(msgs[3]["role"], "user");
    assert!(
        msgs[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a.txt")
    );
    assert!(msgs.iter().all(|m| m["role"] != Role::Tool.as_str()));
}

#[tokio::test]
async fn concurrent_calls_share_one_llm() {
    let h = start(Script::from_turns([Turn::text("ok")])).await;
    let llm = Llm::new(config("openai/mock-model", &h)).unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let llm = llm.clone();
        tasks.push(tokio::spawn(async move {
            let mut req = request(&format!("conversation {i}"));
            req.conversation_id = Some(format!("c{i}"));
            llm.completion(&req, None).await.map(|r| r.message.text())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), "ok");
    }
    assert_eq!(llm.metrics().token_usages.len(), 8);
}
