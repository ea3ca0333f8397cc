use super::*;
use crate::routing;
use openhands_wire::content::ImageContent;
use openhands_wire::llm_config::ApiMode;
use parking_lot::Mutex;
use std::sync::Arc;

fn cfg() -> LlmConfig {
    let mut c = LlmConfig::new("openai/mock-model");
    c.base_url = Some("http://127.0.0.1:1/v1".into());
    c.api_mode = ApiMode::Responses;
    c
}

fn tool() -> ToolSchema {
    ToolSchema {
        name: "terminal".into(),
        description: "Run".into(),
        parameters: json!({"type":"object","properties":{}}),
    }
}

#[test]
fn body_matches_reference_shape() {
    let c = cfg();
    let route = routing::resolve(&c).unwrap();
    let mut assistant = Message::new(Role::Assistant, vec![Content::text("checking")]);
    assistant.responses_reasoning_item = Some(ReasoningItemModel {
        id: Some("rs_1".into()),
        summary: vec!["thought".into()],
        content: None,
        encrypted_content: Some("ENC".into()),
        status: None,
    });
    assistant.tool_calls = Some(vec![MessageToolCall {
        id: "call_1".into(),
        responses_item_id: Some("fc_1".into()),
        name: "terminal".into(),
        arguments: "{}".into(),
        origin: ToolCallOrigin::Responses,
    }]);
    let mut user = Message::user("hi");
    user.content.push(Content::Image(ImageContent {
        cache_prompt: false,
        ..ImageContent::new(vec!["https://x/i.png".into()])
    }));
    let req = LlmRequest {
        messages: vec![
            Message::new(
                Role::System,
                vec![Content::text("sys A"), Content::text("sys B")],
            ),
            user,
            assistant,
            Message::tool_result("call_1", "terminal", vec![Content::text("out")]),
        ],
        tools: vec![tool()],
        conversation_id: Some("conv".into()),
    };
    let body = build_body(&c, &route, &req, false);
    let expected = json!({
        "model": "mock-model",
        "input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "hi"},
                {"type": "input_image", "image_url": "https://x/i.png", "detail": "auto"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}],
                "encrypted_content": "ENC"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "checking"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "terminal", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "out"}
        ],
        "instructions": "sys A\nsys B",
        "tools": [{"type": "function", "name": "terminal", "description": "Run",
            "parameters": {"type":"object","properties":{}}, "strict": false}],
        "tool_choice": "auto",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high"},
        "prompt_cache_key": "conv"
    });
    pretty_assertions::assert_eq!(body, expected);
}

#[test]
fn non_reasoning_model_body_and_fc_prefix() {
    let mut c = LlmConfig::new("litellm_proxy/mock");
    c.base_url = Some("http://h".into());
    c.api_mode = ApiMode::Responses;
    c.temperature = Some(0.5);
    c.max_output_tokens = Some(99);
    let route = routing::resolve(&c).unwrap();
    let mut a = Message::new(Role::Assistant, vec![]);
    a.tool_calls = Some(vec![MessageToolCall {
        id: "call_9".into(),
        responses_item_id: None,
        name: "t".into(),
        arguments: "{}".into(),
        origin: ToolCallOrigin::Completion,
    }]);
    let req = LlmRequest {
        messages: vec![Message::user(""), a],
        tools: vec![],
        conversation_id: None,
    };
    let body = build_body(&c, &route, &req, true);
    let expected = json!({
        "model": "mock",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]},
            {"type": "function_call", "id": "fc_call_9", "call_id": "call_9", "name": "t", "arguments": "{}"}
        ],
        "store": false,
        "temperature": 0.5,
        "max_output_tokens": 99,
        "stream": true
    });
    pretty_assertions::assert_eq!(body, expected);
}

fn sample_output() -> Value {
    json!({
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}],
             "encrypted_content": "ENC"},
            {"type": "message", "id": "msg_1", "role": "assistant",
             "content": [{"type": "output_text", "text": "Running.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "terminal",
             "arguments": "{\"command\":\"ls\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "terminal",
             "arguments": "{bad"}
        ],
        "usage": {"input_tokens": 50, "output_tokens": 7,
            "input_tokens_details": {"cached_tokens": 10}, "output_tokens_details": {"reasoning_tokens": 2}}
    })
}

#[test]
fn parses_output_items() {
    let r = parse_response(&cfg(), sample_output().to_string().as_bytes()).unwrap();
    assert_eq!(r.id, "resp_1");
    assert_eq!(r.message.text(), "Running.");
    let calls = r.message.tool_calls.clone().unwrap();
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].responses_item_id.as_deref(), Some("fc_1"));
    assert_eq!(calls[0].origin, ToolCallOrigin::Responses);
    assert_eq!(calls[1].arguments, "{bad");
    let ri = r.message.responses_reasoning_item.clone().unwrap();
    assert_eq!(ri.summary, vec!["plan".to_string()]);
    assert_eq!(ri.encrypted_content.as_deref(), Some("ENC"));
    assert_eq!(r.usage.prompt_tokens, 50);
    assert_eq!(r.usage.cache_read_tokens, 10);
    assert_eq!(r.usage.reasoning_tokens, 2);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn failures_and_garbage() {
    let failed = json!({"id": "r", "status": "failed", "output": [],
            "error": {"code": "context_length_exceeded", "message": "too long"}});
    assert!(matches!(
        parse_response(&cfg(), failed.to_string().as_bytes()),
        Err(LlmError::ContextWindowExceeded(_))
    ));
    assert!(matches!(
        parse_response(&cfg(), b"[1,2"),
        Err(LlmError::MalformedResponse(_))
    ));
    assert!(matches!(
        parse_response(&cfg(), b"{}"),
        Err(LlmError::MalformedResponse(_))
    ));
    let no_name = json!({"output": [{"type": "function_call", "call_id": "c"}]});
    assert!(matches!(
        parse_response(&cfg(), no_name.to_string().as_bytes()),
        Err(LlmError::MalformedResponse(_))
    ));
    let incomplete = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "part"}]}]});
    let r = parse_response(&cfg(), incomplete.to_string().as_bytes()).unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
}

#[test]
fn stream_events_assemble_and_patch_output() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let cb: TokenCallback = Arc::new(move |d| s2.lock().push(d));
    let mut s = ResponsesStream::new();
    let out = sample_output();
    let items = out["output"].as_array().unwrap().clone();
    let events = vec![
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_1"}}),
        ),
        (
            "response.reasoning_summary_text.delta",
            json!({"type": "response.reasoning_summary_text.delta", "delta": "pl"}),
        ),
        (
            "response.reasoning_summary_text.delta",
            json!({"type": "response.reasoning_summary_text.delta", "delta": "an"}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": items[0]}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "delta": "Run"}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "delta": "ning."}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": items[1]}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": items[2]}),
        ),
    ];
    for (e, d) in &events {
        assert!(!s.feed(e, &d.to_string(), Some(&cb)).unwrap());
    }
    let done = json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "output": [], "usage": {"input_tokens": 3, "output_tokens": 4}}});
    assert!(s.feed("", &done.to_string(), Some(&cb)).unwrap());
    let r = s.finish(&cfg()).unwrap();
    assert_eq!(r.message.text(), "Running.");
    assert_eq!(r.message.tool_calls.unwrap().len(), 1);
    assert_eq!(r.usage.completion_tokens, 4);
    let d = seen.lock().clone();
    assert_eq!(d.len(), 4);
    assert_eq!(d[0].reasoning_content.as_deref(), Some("pl"));
    assert_eq!(d[3].content.as_deref(), Some("ning."));

    let mut cut = ResponsesStream::new();
    cut.feed("", &events[4].1.to_string(), None).unwrap();
    assert!(matches!(
        cut.finish(&cfg()),
        Err(LlmError::MalformedResponse(_))
    ));
    let mut err = ResponsesStream::new();
    let e = json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow"});
    assert!(matches!(
        err.feed("error", &e.to_string(), None),
        Err(LlmError::RateLimit { .. })
    ));
    let mut failed = ResponsesStream::new();
    let f = json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "x"}}});
    assert!(matches!(
        failed.feed("", &f.to_string(), None),
        Err(LlmError::ServiceUnavailable(_))
    ));
}
