use super::*;

fn openai_body(message: &str, kind: &str, code: Option<&str>) -> String {
    serde_json::json!({"error": {"message": message, "type": kind, "code": code, "param": null}})
        .to_string()
}

#[test]
fn every_class_is_mapped() {
    let cw = from_status(
        400,
        &openai_body(
            "too long",
            "invalid_request_error",
            Some("context_length_exceeded"),
        ),
        None,
    );
    assert!(matches!(cw, LlmError::ContextWindowExceeded(_)), "{cw:?}");
    let cw = from_status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        None,
    );
    assert!(matches!(cw, LlmError::ContextWindowExceeded(_)));
    let cw = from_status(
        400,
        "This model's maximum context length is 8192 tokens",
        None,
    );
    assert!(matches!(cw, LlmError::ContextWindowExceeded(_)));
    assert!(matches!(
        from_status(
            401,
            &openai_body("bad key", "invalid_request_error", None),
            None
        ),
        LlmError::Authentication(_)
    ));
    assert!(matches!(
        from_status(403, "forbidden", None),
        LlmError::Authentication(_)
    ));
    assert!(matches!(
        from_status(
            400,
            &openai_body("Incorrect API key provided", "x", None),
            None
        ),
        LlmError::Authentication(_)
    ));
    let rl = from_status(
        429,
        &openai_body("slow down", "rate_limit_error", None),
        Some(Duration::from_secs(2)),
    );
    assert_eq!(rl.retry_after(), Some(Duration::from_secs(2)));
    assert!(matches!(rl, LlmError::RateLimit { .. }));
    assert!(!rl.is_quota_exhaustion());
    let q = from_status(
        429,
        &openai_body("quota", "insufficient_quota", Some("insufficient_quota")),
        None,
    );
    assert!(q.is_quota_exhaustion());
    assert!(matches!(from_status(408, "", None), LlmError::Timeout(_)));
    assert!(matches!(
        from_status(
            400,
            &openai_body("blocked", "invalid_request_error", Some("content_filter")),
            None
        ),
        LlmError::ContentPolicyViolation(_)
    ));
    assert!(matches!(
        from_status(500, "oops", None),
        LlmError::ServiceUnavailable(_)
    ));
    assert!(matches!(
        from_status(503, "", None),
        LlmError::ServiceUnavailable(_)
    ));
    assert!(matches!(
        from_status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            None
        ),
        LlmError::ServiceUnavailable(_)
    ));
    assert!(matches!(
        from_status(404, "no such model", None),
        LlmError::BadRequest(_)
    ));
    assert!(matches!(
        from_status(422, "{}", None),
        LlmError::BadRequest(_)
    ));
    assert!(matches!(
        from_status(
            400,
            &openai_body("each tool_use must have a single result", "x", None),
            None
        ),
        LlmError::MalformedConversationHistory(_)
    ));
}

#[test]
fn messages_keep_status_type_and_code() {
    let e = from_status(
        500,
        &openai_body("mock error 500", "server_error", None),
        None,
    );
    assert_eq!(
        e.to_string(),
        "service unavailable: HTTP 500 (server_error): mock error 500"
    );
}

#[test]
fn in_stream_errors() {
    let info = ErrorInfo {
        message: "boom".into(),
        kind: None,
        code: Some("server_error".into()),
    };
    assert!(matches!(
        classify(None, &info, None),
        LlmError::ServiceUnavailable(_)
    ));
    let info = ErrorInfo {
        message: "Your input exceeds the context window of this model.".into(),
        kind: None,
        code: Some("context_length_exceeded".into()),
    };
    assert!(matches!(
        classify(None, &info, None),
        LlmError::ContextWindowExceeded(_)
    ));
    let info = ErrorInfo {
        message: "Rate limit reached".into(),
        kind: None,
        code: Some("rate_limit_exceeded".into()),
    };
    assert!(matches!(
        classify(None, &info, None),
        LlmError::RateLimit { .. }
    ));
}

#[test]
fn bodies_of_every_shape_parse() {
    assert_eq!(parse_error_body(r#"{"detail":"nope"}"#).message, "nope");
    assert_eq!(parse_error_body(r#"{"error":"flat"}"#).message, "flat");
    assert_eq!(parse_error_body("plain text").message, "plain text");
    assert_eq!(parse_error_body("").message, "");
    let long = "é".repeat(3000);
    assert!(parse_error_body(&long).message.len() < 2100);
}

#[test]
fn retry_after_header_forms() {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("retry-after", "1.5".parse().unwrap());
    assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
    h.insert("retry-after-ms", "20".parse().unwrap());
    assert_eq!(retry_after(&h), Some(Duration::from_millis(20)));
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(
        "retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
    );
    assert_eq!(retry_after(&h), Some(Duration::ZERO));
    h.insert("retry-after", "garbage".parse().unwrap());
    assert_eq!(retry_after(&h), None);
    h.insert("retry-after", "-5".parse().unwrap());
    assert_eq!(retry_after(&h), None);
}
