use super::*;
use openhands_wire::content::ImageContent;
use parking_lot::Mutex;
use std::sync::Arc;

const CLAUDE: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn cfg(model: &str) -> LlmConfig {
    LlmConfig::new(format!("bedrock/{model}"))
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
    a.tool_calls = Some(vec![MessageToolCall {
        id: "tooluse_1".into(),
        responses_item_id: None,
        name: "terminal".into(),
        arguments: r#"{"command":"ls"}"#.into(),
        origin: ToolCallOrigin::Completion,
    }]);
    let mut user = Message::user("hi");
    user.content.push(Content::Image(ImageContent {
        cache_prompt: false,
        ..ImageContent::new(vec!["data:image/png;base64,QUJD".into()])
    }));
    vec![
        Message::new(
            Role::System,
            vec![Content::text("static"), Content::text("dynamic")],
        ),
        user,
        a,
        Message::tool_result("tooluse_1", "terminal", vec![Content::text("a.txt")]),
    ]
}

#[test]
fn body_has_converse_blocks_cache_points_thinking_and_tools() {
    let mut c = cfg(CLAUDE);
    c.reasoning_effort = Some("high".into());
    c.temperature = Some(0.5);
    let req = LlmRequest {
        messages: history(),
        tools: vec![tool()],
        conversation_id: None,
    };
    let body = build_body(&c, CLAUDE, &req).unwrap();
    assert_eq!(
        body["system"],
        json!([{"text": "static"}, {"cachePoint": {"type": "default"}}, {"text": "dynamic"}])
    );
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["content"][0], json!({"text": "hi"}));
    assert_eq!(
        msgs[0]["content"][1],
        json!({"image": {"format": "png", "source": {"bytes": "QUJD"}}})
    );
    assert_eq!(
        msgs[1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig"}}},
            {"text": "Let me look."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "terminal", "input": {"command": "ls"}}}
        ])
    );
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "a.txt"}]}},
            {"cachePoint": {"type": "default"}}
        ])
    );
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
    let max = body["inferenceConfig"]["maxTokens"].as_u64().unwrap();
    assert!(max > 4096, "the table's output limit: {max}");
    // Thinking on: no temperature (as Anthropic requires).
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"]["type"],
        "enabled"
    );
    assert!(body["inferenceConfig"].get("temperature").is_none());
}

#[test]
fn other_families_get_plain_inference_settings_and_no_cache_points() {
    let mut c = cfg("meta.llama3-70b-instruct-v1:0");
    c.temperature = Some(0.2);
    c.top_p = Some(0.9);
    c.top_k = Some(5.0);
    c.max_output_tokens = Some(100);
    let req = LlmRequest {
        messages: history(),
        tools: vec![],
        conversation_id: None,
    };
    let body = build_body(&c, "meta.llama3-70b-instruct-v1:0", &req).unwrap();
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 100, "temperature": 0.2, "topP": 0.9})
    );
    assert!(body.get("additionalModelRequestFields").is_none());
    assert!(body.get("toolConfig").is_none());
    let text = body.to_string();
    assert!(!text.contains("cachePoint"));
    // Without tools, tool blocks are told as text.
    assert!(
        !text.contains("toolUse") && !text.contains("toolResult"),
        "{text}"
    );
    assert!(text.contains("[called tool terminal"));
    // Images must be inline.
    let mut m = Message::user("x");
    m.content.push(Content::Image(ImageContent::new(vec![
        "https://x/i.png".into(),
    ])));
    let req = LlmRequest {
        messages: vec![m],
        ..LlmRequest::default()
    };
    assert!(matches!(
        build_body(&c, "m", &req),
        Err(LlmError::BadRequest(_))
    ));
}

#[test]
fn tool_use_ids_are_made_valid() {
    assert_eq!(tool_use_id("tooluse_AbC-1"), "tooluse_AbC-1");
    assert_eq!(tool_use_id("call:1/2"), "call_1_2");
    assert_eq!(tool_use_id(&"x".repeat(80)).len(), 64);
}

#[test]
fn reply_with_text_tool_use_reasoning_and_cached_usage() {
    let c = cfg(CLAUDE);
    let body = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "think", "signature": "s1"}}},
            {"text": "Running it."},
            {"toolUse": {"toolUseId": "tooluse_9", "name": "terminal", "input": {"command": "pwd"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 45,
                  "cacheReadInputTokens": 20, "cacheWriteInputTokens": 10}
    });
    let r = parse_response(&c, body.to_string().as_bytes()).unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.message.content[0].as_text(), Some("Running it."));
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls[0].id, "tooluse_9");
    assert_eq!(calls[0].arguments, r#"{"command":"pwd"}"#);
    assert_eq!(r.message.reasoning_content.as_deref(), Some("think"));
    assert!(matches!(&r.message.thinking_blocks[0],
        AnyThinkingBlock::Thinking(t) if t.signature.as_deref() == Some("s1")));
    assert_eq!(r.usage.prompt_tokens, 40);
    assert_eq!(r.usage.completion_tokens, 5);
    assert_eq!(r.usage.cache_read_tokens, 20);
    assert_eq!(r.usage.cache_write_tokens, 10);
    assert!(r.id.starts_with("chatcmpl-"));
    assert!(matches!(
        parse_response(&c, b"{}"),
        Err(LlmError::MalformedResponse(_))
    ));
}

#[test]
fn stream_events_assemble_and_stream_deltas() {
    let c = cfg(CLAUDE);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let cb: TokenCallback = Arc::new(move |d| s2.lock().push(d));
    let mut s = ConverseStream::new();
    let events = [
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sg"}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "Hel"}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "lo"}}),
        ),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "terminal"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"comm"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "and\":\"ls\"}"}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 2})),
        ("messageStop", json!({"stopReason": "tool_use"})),
    ];
    for (e, v) in &events {
        s.feed(e, v.to_string().as_bytes(), Some(&cb)).unwrap();
    }
    assert!(!s.is_complete(), "usage comes in metadata");
    s.feed(
        "metadata",
        json!({"usage": {"inputTokens": 7, "outputTokens": 3}, "metrics": {"latencyMs": 5}})
            .to_string()
            .as_bytes(),
        Some(&cb),
    )
    .unwrap();
    assert!(s.is_complete());
    let r = s.finish(&c).unwrap();
    assert_eq!(r.message.content[0].as_text(), Some("Hello"));
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    assert!(matches!(&r.message.thinking_blocks[0],
        AnyThinkingBlock::Thinking(t) if t.thinking == "hm" && t.signature.as_deref() == Some("sg")));
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (7, 3));
    let seen = seen.lock();
    assert_eq!(seen[0].reasoning_content.as_deref(), Some("hm"));
    assert_eq!(seen[1].content.as_deref(), Some("Hel"));
    // A stream cut before messageStop is an error.
    let cut = ConverseStream::new();
    assert!(matches!(
        cut.finish(&c),
        Err(LlmError::MalformedResponse(_))
    ));
}

#[test]
fn exceptions_map_to_error_classes() {
    assert!(matches!(
        exception_error("throttlingException", br#"{"message":"slow down"}"#),
        LlmError::RateLimit { .. }
    ));
    assert!(matches!(
        exception_error(
            "ValidationException",
            br#"{"message":"Input is too long for requested model."}"#
        ),
        LlmError::ContextWindowExceeded(_)
    ));
    assert!(matches!(
        exception_error("ValidationException", br#"{"message":"bad field"}"#),
        LlmError::BadRequest(_)
    ));
    assert!(matches!(
        exception_error("AccessDeniedException", br#"{"Message":"no"}"#),
        LlmError::Authentication(_)
    ));
    assert!(matches!(
        exception_error("serviceUnavailableException", b"{}"),
        LlmError::ServiceUnavailable(_)
    ));
}
