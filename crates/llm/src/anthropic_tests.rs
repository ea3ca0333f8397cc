use super::*;
use crate::routing;
use openhands_wire::content::ImageContent;
use parking_lot::Mutex;
use std::sync::Arc;

fn cfg(model: &str) -> LlmConfig {
    let mut c = LlmConfig::new(model);
    c.base_url = Some("http://127.0.0.1:1".into());
    c
}

fn tool() -> ToolSchema {
    ToolSchema {
        name: "terminal".into(),
        description: "Run".into(),
        parameters: json!({"type":"object","properties":{"command":{"type":"string"}}}),
    }
}

fn history() -> Vec<Message> {
    let mut a = Message::new(Role::Assistant, vec![Content::text("Let me look.")]);
    a.thinking_blocks = vec![AnyThinkingBlock::Thinking(ThinkingBlock {
        thinking: "plan".into(),
        signature: Some("sig".into()),
    })];
    a.tool_calls = Some(vec![
        MessageToolCall {
            id: "toolu_1".into(),
            responses_item_id: None,
            name: "terminal".into(),
            arguments: r#"{"command":"ls"}"#.into(),
            origin: ToolCallOrigin::Completion,
        },
        MessageToolCall {
            id: "toolu_2".into(),
            responses_item_id: None,
            name: "terminal".into(),
            arguments: "{broken".into(),
            origin: ToolCallOrigin::Completion,
        },
    ]);
    let mut user = Message::user("hi");
    user.content.push(Content::Image(ImageContent {
        cache_prompt: false,
        ..ImageContent::new(vec![
            "data:image/png;base64,QUJD".into(),
            "https://x/i.png".into(),
        ])
    }));
    vec![
        Message::new(
            Role::System,
            vec![Content::text("static"), Content::text("dynamic")],
        ),
        user,
        a,
        Message::tool_result("toolu_1", "terminal", vec![Content::text("a.txt")]),
        Message::tool_result("toolu_2", "terminal", vec![Content::text("error")]),
    ]
}

#[test]
fn body_with_cache_markers_thinking_and_merged_tool_results() {
    let c = cfg("anthropic/claude-sonnet-4-5-20250929");
    let route = routing::resolve(&c).unwrap();
    let req = LlmRequest {
        messages: history(),
        tools: vec![tool()],
        conversation_id: Some("conv".into()),
    };
    let body = build_body(&c, &route, &req, false);
    let expected = json!({
        "model": "claude-sonnet-4-5-20250929",
        "system": [
            {"type": "text", "text": "static", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "dynamic"}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "image", "source": {"type": "url", "url": "https://x/i.png"}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "terminal", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "terminal", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.txt"}]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "error"}],
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [{"name": "terminal", "description": "Run",
            "input_schema": {"type":"object","properties":{"command":{"type":"string"}}}}],
        "max_tokens": 64000,
        "thinking": {"type": "enabled", "budget_tokens": 63999}
    });
    pretty_assertions::assert_eq!(body, expected);
    let h = headers(&c, &route, &req);
    let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(get("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(
        get("anthropic-beta").as_deref(),
        Some("interleaved-thinking-2025-05-14")
    );
    assert!(get("authorization").is_none());
}

#[test]
fn plain_model_body_sampling_and_stream() {
    let mut c = cfg("anthropic/mock-model");
    c.temperature = Some(0.1);
    c.top_k = Some(5.0);
    c.api_key = Some("sk-ant".into());
    let route = routing::resolve(&c).unwrap();
    let req = LlmRequest {
        messages: vec![
            Message::user("a"),
            Message::user("b"),
            Message::assistant(""),
        ],
        tools: vec![],
        conversation_id: None,
    };
    let body = build_body(&c, &route, &req, true);
    let expected = json!({
        "model": "mock-model",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
        "max_tokens": 4096,
        "temperature": 0.1,
        "top_k": 5,
        "stream": true
    });
    pretty_assertions::assert_eq!(body, expected);
    let h = headers(&c, &route, &req);
    assert!(h.iter().any(|(k, v)| k == "x-api-key" && v == "sk-ant"));
    assert!(!h.iter().any(|(k, _)| k == "anthropic-beta"));
}

#[test]
fn parses_blocks_and_usage() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s1"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "text", "text": "I'll list."},
            {"type": "tool_use", "id": "toolu_1", "name": "terminal", "input": {"command": "ls"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50}
    });
    let r = parse_response(
        &cfg("anthropic/claude-sonnet-4-5"),
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.id, "msg_1");
    assert_eq!(r.message.text(), "I'll list.");
    assert_eq!(r.message.reasoning_content.as_deref(), Some("hmm"));
    assert_eq!(r.message.thinking_blocks.len(), 2);
    assert_eq!(
        r.message.tool_calls.as_ref().unwrap()[0].arguments,
        r#"{"command":"ls"}"#
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.usage.prompt_tokens, 160);
    assert_eq!(r.usage.cache_write_tokens, 100);
    assert_eq!(r.usage.cache_read_tokens, 50);
    assert_eq!(r.usage.context_window, 200_000);
    let err =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    assert!(matches!(
        parse_response(&cfg("anthropic/m"), err.to_string().as_bytes()),
        Err(LlmError::ServiceUnavailable(_))
    ));
    assert!(matches!(
        parse_response(&cfg("anthropic/m"), b"{"),
        Err(LlmError::MalformedResponse(_))
    ));
    assert!(matches!(
        parse_response(&cfg("anthropic/m"), b"{}"),
        Err(LlmError::MalformedResponse(_))
    ));
}

#[test]
fn stream_events_assemble() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let cb: TokenCallback = Arc::new(move |d| s2.lock().push(d));
    let events = [
        json!({"type":"message_start","message":{"id":"msg_9","usage":{"input_tokens":12,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sg"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi "}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"there"}}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"terminal","input":{}}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\""}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":": \"ls\"}"}}),
        json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"terminal","input":{}}}),
        json!({"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{bad"}}),
        json!({"type":"ping"}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}),
    ];
    let mut s = AnthropicStream::new();
    for e in &events {
        assert!(!s.feed("", &e.to_string(), Some(&cb)).unwrap());
    }
    assert!(
        s.feed("message_stop", r#"{"type":"message_stop"}"#, Some(&cb))
            .unwrap()
    );
    let r = s.finish(&cfg("anthropic/m")).unwrap();
    assert_eq!(r.id, "msg_9");
    assert_eq!(r.message.text(), "Hi there");
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    assert_eq!(calls[1].arguments, "{bad");
    assert_eq!(r.message.thinking_blocks.len(), 1);
    assert_eq!(r.usage.prompt_tokens, 12);
    assert_eq!(r.usage.completion_tokens, 20);
    let d = seen.lock().clone();
    assert_eq!(d.len(), 3);
    assert_eq!(d[0].reasoning_content.as_deref(), Some("hm"));
    assert_eq!(d[2].content.as_deref(), Some("there"));

    let mut cut = AnthropicStream::new();
    cut.feed("", &events[0].to_string(), None).unwrap();
    assert!(matches!(
        cut.finish(&cfg("anthropic/m")),
        Err(LlmError::MalformedResponse(_))
    ));
    let mut orphan = AnthropicStream::new();
    assert!(orphan.feed("", &events[2].to_string(), None).is_err());
    let mut err = AnthropicStream::new();
    let e = json!({"type":"error","error":{"type":"rate_limit_error","message":"slow"}});
    assert!(matches!(
        err.feed("error", &e.to_string(), None),
        Err(LlmError::RateLimit { .. })
    ));
}
