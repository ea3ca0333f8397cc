use super::*;

fn jwt(claims: Value) -> String {
    let enc = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!("{}.{}.sig", enc(&json!({"alg": "RS256"})), enc(&claims))
}

#[test]
fn the_account_id_comes_from_the_token_claims() {
    let token = jwt(json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-7"}}));
    assert_eq!(account_id(&token).as_deref(), Some("acct-7"));
    assert_eq!(account_id(&jwt(json!({"sub": "x"}))), None);
    assert_eq!(account_id("not-a-jwt"), None);
}

#[test]
fn the_subscription_config_is_the_references() {
    let e = Endpoints::new("http://issuer/", "http://codex/");
    assert_eq!(e.codex_base, "http://codex");
    let c = llm_config("gpt-5.5", &e).unwrap();
    assert_eq!(c.model, "openai/gpt-5.5");
    assert_eq!(c.base_url.as_deref(), Some("http://codex"));
    assert_eq!(c.auth_type, "subscription");
    assert!(c.stream && c.api_key.is_none() && c.temperature.is_none());
    assert_eq!(c.api_mode, ApiMode::Responses);
    assert_eq!(c.litellm_extra_body["store"], false);
    let h = c.extra_headers.unwrap();
    assert_eq!(h["originator"], "codex_cli_rs");
    assert_eq!(h["OpenAI-Beta"], "responses=experimental");
    assert_eq!(c.extra["subscription_vendor"], "openai");
    let err = llm_config("gpt-4o", &e).unwrap_err().to_string();
    assert!(
        err.contains("'gpt-4o' is not supported") && err.contains("gpt-5.5"),
        "{err}"
    );
    let mut other = LlmConfig::new("openai/gpt-5.5");
    other
        .extra
        .insert("subscription_vendor".into(), json!("acme"));
    assert!(check_vendor(&other).is_err());
}

#[test]
fn the_body_is_shaped_for_the_codex_backend() {
    let mut body = json!({
        "model": "gpt-5.5",
        "instructions": "SYSTEM",
        "input": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
        ],
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high"},
        "temperature": 0.2,
        "max_output_tokens": 10,
        "prompt_cache_retention": "24h",
        "store": false,
        "stream": true,
    });
    adapt_body(&mut body);
    assert_eq!(
        body,
        json!({
            "model": "gpt-5.5",
            "instructions": DEFAULT_INSTRUCTIONS,
            "input": [
                {"role": "user", "content": [
                    {"type": "input_text", "text": "Context (system prompt):\nSYSTEM\n\n"},
                    {"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
            ],
            "store": false,
            "stream": true,
        })
    );
    let mut no_user = json!({"instructions": "S", "input": []});
    adapt_body(&mut no_user);
    assert_eq!(no_user["input"][0]["role"], "user");
    assert_eq!(
        no_user["input"][0]["content"][0]["text"],
        "Context (system prompt):\nS\n\n"
    );
}
