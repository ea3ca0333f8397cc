use super::*;
use crate::routing;
use openhands_wire::content::{ImageContent, TextContent};
use openhands_wire::message::ThinkingBlock;
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
        description: "Run a command".into(),
        parameters: json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
    }
}

fn history() -> Vec<Message> {
    let mut assistant = Message::new(Role::Assistant, vec![Content::text("")]);
    assistant.tool_calls = Some(vec![MessageToolCall {
        id: "call_1".into(),
        responses_item_id: None,
        name: "terminal".into(),
        arguments: r#"{"command":"ls"}"#.into(),
        origin: ToolCallOrigin::Completion,
    }]);
    vec![
        Message::new(
            Role::System,
            vec![
                Content::text("static prompt"),
                Content::text("dynamic context"),
            ],
        ),
        Message::user("list files"),
        assistant,
        Message::tool_result("call_1", "terminal", vec![Content::text("a.txt")]),
    ]
}

#[test]
fn body_matches_reference_shape_for_openai_mock_model() {
    let c = cfg("openai/mock-model");
    let route = routing::resolve(&c).unwrap();
    let req = LlmRequest {
        messages: history(),
        tools: vec![tool()],
        conversation_id: Some("conv-1".into()),
    };
    let body = build_body(&c, &route, &req, false);
    let expected = json!({
        "model": "mock-model",
        "messages": [
            {"role": "system", "content": [
                {"type": "text", "text": "static prompt"},
                {"type": "text", "text": "dynamic context"}]},
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "terminal", "arguments": "{\"command\":\"ls\"}"}}]},
            {"role": "tool", "content": [{"type": "text", "text": "a.txt"}],
                "tool_call_id": "call_1", "name": "terminal"}
        ],
        "tools": [{"type": "function", "function": {"name": "terminal", "description": "Run a command",
            "parameters": {"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}],
        "reasoning_effort": "high",
        "prompt_cache_key": "conv-1"
    });
    pretty_assertions::assert_eq!(body, expected);
}

#[test]
fn body_options_sampling_streaming_and_extra_body() {
    let mut c = cfg("litellm_proxy/mock-model");
    c.temperature = Some(0.2);
    c.top_p = Some(0.9);
    c.max_output_tokens = Some(1000);
    c.seed = Some(7);
    c.litellm_extra_body
        .insert("metadata".into(), json!({"k": 1}));
    let route = routing::resolve(&c).unwrap();
    let req = LlmRequest {
        messages: vec![Message::user("hi")],
        tools: vec![],
        conversation_id: Some("conv".into()),
    };
    let body = build_body(&c, &route, &req, true);
    let expected = json!({
        "model": "mock-model",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 1000,
        "seed": 7,
        "stream": true,
        "stream_options": {"include_usage": true},
        "metadata": {"k": 1}
    });
    pretty_assertions::assert_eq!(body, expected);
}

#[test]
fn cache_markers_for_claude_via_proxy_and_images() {
    let c = cfg("litellm_proxy/claude-sonnet-4-5-20250929");
    let route = routing::resolve(&c).unwrap();
    let mut user = Message::user("look");
    user.content.push(Content::Image(ImageContent {
        cache_prompt: false,
        ..ImageContent::new(vec!["data:image/png;base64,AAA".into()])
    }));
    let mut msgs = history();
    msgs.insert(2, user);
    let mut thinking_turn = msgs[3].clone();
    thinking_turn.thinking_blocks = vec![AnyThinkingBlock::Thinking(ThinkingBlock {
        thinking: "hmm".into(),
        signature: Some("sig".into()),
    })];
    msgs[3] = thinking_turn;
    let req = LlmRequest {
        messages: msgs,
        tools: vec![],
        conversation_id: Some("conv".into()),
    };
    let body = build_body(&c, &route, &req, false);
    let m = &body["messages"];
    assert_eq!(
        m[0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(m[0]["content"][1].get("cache_control").is_none());
    assert!(m[1]["content"][0].get("cache_control").is_none());
    assert_eq!(
        m[2]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}})
    );
    assert_eq!(
        m[3]["thinking_blocks"],
        json!([{"type": "thinking", "thinking": "hmm", "signature": "sig"}])
    );
    // Last tool message: marker moves to the message level.
    assert_eq!(m[4]["cache_control"], json!({"type": "ephemeral"}));
    assert!(m[4]["content"][0].get("cache_control").is_none());
    // Claude via proxy: no prompt_cache_key, thinking with budget.
    assert!(body.get("prompt_cache_key").is_none());
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 63999})
    );
    assert_eq!(body["max_tokens"], json!(64000));
    let h = headers(&c, &route, &req);
    assert!(
        h.iter()
            .any(|(k, v)| k == "anthropic-beta" && v.starts_with("interleaved"))
    );
}

#[test]
fn caching_off_and_vision_off() {
    let mut c = cfg("litellm_proxy/claude-sonnet-4-5");
    c.caching_prompt = false;
    c.disable_vision = Some(true);
    let mut user = Message::user("look");
    user.content.push(Content::Image(ImageContent {
        cache_prompt: true,
        ..ImageContent::new(vec!["https://x/y.png".into()])
    }));
    let msgs = messages_json(&c, &[Message::system("s"), user]);
    assert_eq!(msgs[0]["content"], json!([{"type": "text", "text": "s"}]));
    assert_eq!(
        msgs[1]["content"],
        json!([{"type": "text", "text": "look"}])
    );
}

#[test]
fn string_serializer_models_get_plain_strings() {
    let c = cfg("openai/glm-4.6");
    let msgs = messages_json(&c, &[Message::user("a"), Message::assistant("")]);
    assert_eq!(msgs[0], json!({"role": "user", "content": "a"}));
    assert_eq!(msgs[1], json!({"role": "assistant", "content": ""}));
    let c = cfg("openai/kimi-k2-thinking");
    let mut a = Message::assistant("x");
    a.reasoning_content = Some("why".into());
    assert_eq!(messages_json(&c, &[a])[0]["reasoning_content"], "why");
}

#[test]
fn parses_reply_with_reasoning_tool_calls_and_usage() {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Running it.", "reasoning_content": "think",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "terminal", "arguments": "{not json"}}
            ]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 20}, "completion_tokens_details": {"reasoning_tokens": 4}}
    });
    let r = parse_response(&cfg("openai/mock-model"), body.to_string().as_bytes()).unwrap();
    assert_eq!(r.id, "chatcmpl-1");
    assert_eq!(r.message.text(), "Running it.");
    assert_eq!(r.message.reasoning_content.as_deref(), Some("think"));
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].arguments, "{not json");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.usage.prompt_tokens, 100);
    assert_eq!(r.usage.cache_read_tokens, 20);
    assert_eq!(r.usage.reasoning_tokens, 4);
    assert_eq!(r.usage.per_turn_token, 110);
    assert_eq!(r.usage.response_id, "chatcmpl-1");
    assert_eq!(r.usage.model, "openai/mock-model");
}

#[test]
fn bad_replies_are_typed_errors() {
    let c = cfg("openai/m");
    for body in [
        "not json",
        "",
        "{}",
        r#"{"choices": []}"#,
        r#"{"choices": [{"message": {"tool_calls": [{"type":"function","function":{"arguments":"{}"}}]}}]}"#,
    ] {
        assert!(
            matches!(
                parse_response(&c, body.as_bytes()),
                Err(LlmError::MalformedResponse(_))
            ),
            "{body}"
        );
    }
    let ok = parse_response(&c, br#"{"choices":[{"message":{"content":null}}]}"#).unwrap();
    assert!(ok.message.content.is_empty());
    assert!(ok.id.starts_with("chatcmpl-"));
}

fn collect() -> (TokenCallback, Arc<Mutex<Vec<StreamDelta>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (Arc::new(move |d| s.lock().push(d)), seen)
}

#[test]
fn stream_assembles_ordered_deltas_and_parallel_calls() {
    let (cb, seen) = collect();
    let mut s = ChatStream::new();
    let chunks = [
        json!({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me "}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"think."}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"content":"lo"}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[
                {"index":0,"id":"call_1","type":"function","function":{"name":"terminal","arguments":""}},
                {"index":1,"id":"call_2","type":"function","function":{"name":"file_editor","arguments":"{\"pa"}}]}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[
                {"index":0,"function":{"arguments":"{\"command\":"}},
                {"index":1,"function":{"arguments":"th\":1}"}}]}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}),
        json!({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"id":"c1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}),
    ];
    for c in &chunks {
        assert!(!s.feed(&c.to_string(), Some(&cb)).unwrap());
    }
    assert!(s.feed("[DONE]", Some(&cb)).unwrap());
    let r = s.finish(&cfg("openai/m")).unwrap();
    let deltas = seen.lock().clone();
    assert_eq!(
        deltas,
        vec![
            StreamDelta {
                content: None,
                reasoning_content: Some("Let me ".into())
            },
            StreamDelta {
                content: None,
                reasoning_content: Some("think.".into())
            },
            StreamDelta {
                content: Some("Hel".into()),
                reasoning_content: None
            },
            StreamDelta {
                content: Some("lo".into()),
                reasoning_content: None
            },
        ]
    );
    assert_eq!(r.id, "c1");
    assert_eq!(r.message.text(), "Hello");
    assert_eq!(
        r.message.reasoning_content.as_deref(),
        Some("Let me think.")
    );
    let calls = r.message.tool_calls.unwrap();
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    assert_eq!(calls[1].name, "file_editor");
    assert_eq!(calls[1].arguments, r#"{"path":1}"#);
    assert_eq!(r.usage.prompt_tokens, 5);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn stream_without_index_and_cut_streams() {
    let mut s = ChatStream::new();
    s.feed(r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#, None)
            .unwrap();
    s.feed(r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{}"}}]},"finish_reason":"stop"}]}"#, None)
            .unwrap();
    let r = s.finish(&cfg("openai/m")).unwrap();
    assert_eq!(r.message.tool_calls.unwrap().len(), 2);

    let mut cut = ChatStream::new();
    cut.feed(r#"{"choices":[{"delta":{"content":"par"}}]}"#, None)
        .unwrap();
    assert!(matches!(
        cut.finish(&cfg("openai/m")),
        Err(LlmError::MalformedResponse(_))
    ));

    let mut bad = ChatStream::new();
    assert!(matches!(
        bad.feed("{oops", None),
        Err(LlmError::MalformedResponse(_))
    ));
    let mut err = ChatStream::new();
    assert!(matches!(
        err.feed(
            r#"{"error":{"message":"overloaded","code":"server_error"}}"#,
            None
        ),
        Err(LlmError::ServiceUnavailable(_))
    ));
    // Text-only tool content survives string serialization too.
    let t = Message::tool_result("c", "t", vec![Content::Text(TextContent::new("out"))]);
    assert_eq!(
        messages_json(&cfg("openai/glm-4"), &[t])[0]["content"],
        "out"
    );
}
