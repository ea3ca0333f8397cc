use super::*;
use openhands_wire::content::ImageContent;

#[test]
fn signatures_ride_in_the_call_id() {
    assert_eq!(
        id_with_signature("call_1", Some("c2ln")),
        "call_1__thought__c2ln"
    );
    assert_eq!(id_with_signature("call_1", None), "call_1");
    assert_eq!(
        split_signature("call_1__thought__c2ln"),
        ("call_1", Some("c2ln"))
    );
    assert_eq!(split_signature("call_1"), ("call_1", None));
}

#[test]
fn body_turns_parts_tools_and_thinking() {
    let mut c = LlmConfig::new("gemini/gemini-2.5-pro");
    c.reasoning_effort = Some("medium".into());
    c.temperature = Some(0.1);
    let mut a = Message::new(Role::Assistant, vec![Content::text("Looking.")]);
    a.tool_calls = Some(vec![MessageToolCall {
        id: "call_1__thought__U0lH".into(),
        responses_item_id: None,
        name: "terminal".into(),
        arguments: r#"{"command":"ls"}"#.into(),
        origin: ToolCallOrigin::Completion,
    }]);
    let mut user = Message::user("hi");
    user.content.push(Content::Image(ImageContent::new(vec![
        "data:image/png;base64,QUJD".into(),
    ])));
    let req = LlmRequest {
        messages: vec![
            Message::system("sys"),
            user,
            a,
            Message::tool_result(
                "call_1__thought__U0lH",
                "terminal",
                vec![Content::text("a.txt")],
            ),
        ],
        tools: vec![ToolSchema {
            name: "terminal".into(),
            description: "Run".into(),
            parameters: json!({"type": "object"}),
        }],
        conversation_id: None,
    };
    let body = build_body(&c, "gemini-2.5-pro", &req);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "sys"}]})
    );
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(
        contents[0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "QUJD"}})
    );
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][1],
        json!({"functionCall": {"id": "call_1", "name": "terminal", "args": {"command": "ls"}},
               "thoughtSignature": "U0lH"})
    );
    assert_eq!(
        contents[2]["parts"][0],
        json!({"functionResponse": {"id": "call_1", "name": "terminal",
               "response": {"content": "a.txt"}}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["name"],
        "terminal"
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
    assert_eq!(body["generationConfig"]["temperature"], 0.1);
    let c3 = LlmConfig::new("gemini/gemini-3-pro-preview");
    let body = build_body(&c3, "gemini-3-pro-preview", &req);
    assert_eq!(
        body["generationConfig"]["thinkingConfig"]["thinkingLevel"],
        "high"
    );
}

#[test]
fn reply_usage_counts_thoughts_as_output() {
    let c = LlmConfig::new("gemini/gemini-2.5-pro");
    let v = json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "plan", "thought": true},
            {"text": "Done."}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4,
                          "thoughtsTokenCount": 6, "cachedContentTokenCount": 2},
        "responseId": "r1"
    });
    let r = parse_response(&c, v.to_string().as_bytes()).unwrap();
    assert_eq!(r.id, "r1");
    assert_eq!(r.message.content[0].as_text(), Some("Done."));
    assert_eq!(r.message.reasoning_content.as_deref(), Some("plan"));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        (
            r.usage.prompt_tokens,
            r.usage.completion_tokens,
            r.usage.reasoning_tokens,
            r.usage.cache_read_tokens
        ),
        (10, 10, 6, 2)
    );
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
    assert!(matches!(
        parse_response(&c, blocked.to_string().as_bytes()),
        Err(LlmError::ContentPolicyViolation(_))
    ));
}
