use super::*;
use crate::script::ScriptUsage;
use openhands_llm::ToolSchema;
use serde_json::json;
use std::sync::Arc;

fn config() -> LlmConfig {
    serde_json::from_value(json!({"model": "openai/mock-model"})).unwrap()
}

// `..default()` keeps this compiling when the LLM crate adds request fields.
#[allow(clippy::needless_update)]
fn req(messages: Vec<Message>) -> LlmRequest {
    LlmRequest {
        messages,
        tools: vec![ToolSchema {
            name: "terminal".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        }],
        conversation_id: Some("c1".into()),
        ..LlmRequest::default()
    }
}

#[tokio::test]
async fn answers_tool_calls_then_text_and_records() {
    let llm = ScriptedLlm::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"})).with_reasoning("plan"),
        Turn::text("done").with_usage(ScriptUsage {
            prompt_tokens: 50,
            completion_tokens: 5,
            cache_read_tokens: 7,
            cache_write_tokens: 3,
            reasoning_tokens: 2,
        }),
    ]);
    let cfg = config();
    let r = llm
        .complete(&cfg, &req(vec![Message::user("go")]), None)
        .await
        .unwrap();
    assert!(r.id.starts_with("chatcmpl-"));
    let calls = r.message.tool_calls.clone().unwrap();
    assert_eq!(calls[0].name, "terminal");
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    assert!(calls[0].id.starts_with("call_0_0_"));
    assert_eq!(calls[0].origin, ToolCallOrigin::Completion);
    assert_eq!(r.message.reasoning_content.as_deref(), Some("plan"));
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        (r.usage.prompt_tokens, r.usage.completion_tokens),
        (100, 10)
    );
    assert_eq!(r.usage.response_id, r.id);
    assert_eq!(r.usage.model, "openai/mock-model");

    let history = vec![
        Message::user("go"),
        r.message.clone(),
        Message::tool_result(calls[0].id.clone(), "terminal", vec![Content::text("a b")]),
    ];
    let r2 = llm.complete(&cfg, &req(history), None).await.unwrap();
    assert_eq!(r2.message.text(), "done");
    assert_eq!(r2.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        (
            r2.usage.cache_read_tokens,
            r2.usage.cache_write_tokens,
            r2.usage.reasoning_tokens
        ),
        (7, 3, 2)
    );
    assert_eq!(r2.usage.per_turn_token, 55);
    assert_eq!(llm.request_count(), 2);
    assert_eq!(llm.requests()[1].messages.len(), 3);
}

#[tokio::test]
async fn streams_pieces_to_callback() {
    let llm = ScriptedLlm::from_turns([Turn::text("hello world!")
        .with_reasoning("abcd")
        .with_chunk_chars(5)]);
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let cb: TokenCallback = Arc::new(move |d: StreamDelta| sink.lock().push(d));
    let r = llm
        .complete(&config(), &req(vec![Message::user("x")]), Some(cb))
        .await
        .unwrap();
    let got = got.lock().clone();
    let content: Vec<_> = got.iter().filter_map(|d| d.content.clone()).collect();
    assert_eq!(content, vec!["hello", " worl", "d!"]);
    assert_eq!(got[0].reasoning_content.as_deref(), Some("abcd"));
    assert_eq!(content.concat(), r.message.text());
}

#[tokio::test]
async fn cut_stream_delivers_part_then_fails() {
    let llm = ScriptedLlm::from_turns([Turn::text("abcdefghijkl")
        .with_chunk_chars(3)
        .with_cut_stream()]);
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let cb: TokenCallback = Arc::new(move |d: StreamDelta| sink.lock().push(d));
    let err = llm
        .complete(&config(), &req(vec![Message::user("x")]), Some(cb))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::MalformedResponse(_)));
    assert_eq!(got.lock().len(), 2);
    // without streaming the cut does not apply
    let ok = llm
        .complete(&config(), &req(vec![Message::user("x")]), None)
        .await;
    assert!(ok.is_ok());
}

#[tokio::test]
async fn errors_map_to_llm_error_variants() {
    let cases: Vec<(TurnError, &str)> = vec![
        (TurnError::status(401), "LLMAuthenticationError"),
        (TurnError::status(403), "LLMAuthenticationError"),
        (TurnError::status(429), "LLMRateLimitError"),
        (TurnError::status(408), "LLMTimeoutError"),
        (TurnError::status(504), "LLMTimeoutError"),
        (TurnError::context_window(), "LLMContextWindowExceedError"),
        (TurnError::status(400), "LLMBadRequestError"),
        (TurnError::status(404), "LLMBadRequestError"),
        (TurnError::status(500), "LLMServiceUnavailableError"),
        (TurnError::status(503), "LLMServiceUnavailableError"),
    ];
    for (e, code) in cases {
        let llm = ScriptedLlm::from_turns([Turn::default().with_error(e.clone())]);
        let err = llm
            .complete(&config(), &req(vec![Message::user("x")]), None)
            .await
            .unwrap_err();
        assert_eq!(err.code(), code, "{e:?}");
    }
    let mut e = TurnError::status(429);
    e.retry_after = Some(3);
    match llm_error_for(&e) {
        LlmError::RateLimit { retry_after, .. } => {
            assert_eq!(retry_after, Some(Duration::from_secs(3)))
        }
        other => panic!("{other:?}"),
    }
    let llm = ScriptedLlm::from_turns([Turn::raw_body("not json")]);
    let err = llm
        .complete(&config(), &req(vec![Message::user("x")]), None)
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::MalformedResponse(_)));
}

#[tokio::test]
async fn fail_times_then_success_per_conversation() {
    let llm = ScriptedLlm::from_turns([Turn::error(500).with_fail_times(1).with_text("ok")]);
    let cfg = config();
    let r = req(vec![Message::user("x")]);
    assert!(llm.complete(&cfg, &r, None).await.is_err());
    assert_eq!(
        llm.complete(&cfg, &r, None).await.unwrap().message.text(),
        "ok"
    );
    let mut other = r.clone();
    other.conversation_id = Some("c2".into());
    assert!(llm.complete(&cfg, &other, None).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn delay_is_honoured_and_cancellable() {
    let llm = ScriptedLlm::from_turns([Turn::text("late").with_delay_ms(60_000)]);
    let cfg = config();
    let r = req(vec![Message::user("x")]);
    let fut = llm.complete(&cfg, &r, None);
    let timed = tokio::time::timeout(Duration::from_secs(1), fut).await;
    assert!(timed.is_err(), "the delay must hold the answer back");
    let start = tokio::time::Instant::now();
    let done = llm.complete(&cfg, &r, None).await.unwrap();
    assert_eq!(done.message.text(), "late");
    assert!(start.elapsed() >= Duration::from_secs(60));
}

#[tokio::test]
async fn toolless_requests_get_toolless_reply() {
    let llm = ScriptedLlm::new(
        Script::from_turns([Turn::text("scripted")]).with_toolless_reply(Turn::text("Title")),
    );
    let mut r = req(vec![Message::user("x")]);
    r.tools.clear();
    let out = llm.complete(&config(), &r, None).await.unwrap();
    assert_eq!(out.message.text(), "Title");
}
