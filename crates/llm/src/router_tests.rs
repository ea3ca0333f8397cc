use super::*;
use crate::Llm;
use crate::types::{LlmBackend, LlmRequest, LlmResponse, TokenCallback};
use openhands_wire::content::ImageContent;
use openhands_wire::metrics::TokenUsage;
use serde_json::json;
use std::sync::Arc;

/// Answers `text` to every call and records the requests.
struct Fake {
    text: String,
    seen: Mutex<Vec<LlmRequest>>,
}

impl Fake {
    fn new(text: &str) -> Arc<Self> {
        Arc::new(Self {
            text: text.into(),
            seen: Mutex::new(Vec::new()),
        })
    }
    fn requests(&self) -> Vec<LlmRequest> {
        self.seen.lock().clone()
    }
    fn request_count(&self) -> usize {
        self.seen.lock().len()
    }
}

#[async_trait::async_trait]
impl LlmBackend for Fake {
    async fn complete(
        &self,
        _config: &LlmConfig,
        request: &LlmRequest,
        _on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        self.seen.lock().push(request.clone());
        Ok(LlmResponse {
            id: "r".into(),
            message: Message::assistant(self.text.clone()),
            usage: TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 2,
                ..TokenUsage::default()
            },
            finish_reason: Some("stop".into()),
        })
    }
}

fn config(v: Value) -> LlmConfig {
    serde_json::from_value(v).unwrap()
}

/// The JSON the reference writes for a `MultimodalRouter` (trimmed).
fn multimodal_json() -> Value {
    json!({
        "model": "router", "usage_id": "agent", "router_name": "multimodal_router",
        "llms_for_routing": {
            "primary": {"model": "gpt-4o", "usage_id": "vision", "api_key": "k1"},
            "secondary": {"model": "gpt-3.5-turbo", "usage_id": "text", "api_key": "k2"}
        },
        "active_llm": null
    })
}

fn member(model: &str, usage: &str, fake: &Arc<Fake>) -> Llm {
    let mut c = LlmConfig::new(model);
    c.usage_id = usage.into();
    c.num_retries = 0;
    Llm::with_backend(c, fake.clone())
}

#[test]
fn the_reference_json_is_a_router_and_round_trips() {
    let v = multimodal_json();
    let c = config(v.clone());
    let (strategy, members) = spec_of(&c).unwrap().unwrap();
    assert_eq!(strategy, Strategy::Multimodal);
    let names: Vec<_> = members
        .iter()
        .map(|(k, m)| (k.as_str(), m.model.as_str()))
        .collect();
    assert_eq!(
        names,
        [("primary", "gpt-4o"), ("secondary", "gpt-3.5-turbo")]
    );
    let back = c.to_value_exposing_secrets().unwrap();
    assert_eq!(back["router_name"], v["router_name"]);
    assert_eq!(back["llms_for_routing"], v["llms_for_routing"]);
    assert!(back.as_object().unwrap().contains_key("active_llm"));

    let llm = Llm::new(c).unwrap();
    let router = llm.as_router().unwrap();
    assert_eq!(router.members().len(), 2);
    let answering: Vec<_> = llm
        .answering_llms()
        .iter()
        .map(|l| l.usage_id().to_string())
        .collect();
    assert_eq!(answering, ["vision", "text"]);
    assert!(spec_of(&LlmConfig::new("gpt-4o")).unwrap().is_none());
}

#[test]
fn bad_router_configurations_name_the_field() {
    let err = |v: Value| spec_of(&config(v)).unwrap_err().to_string();
    let mut v = multimodal_json();
    v["llms_for_routing"] = json!({});
    assert!(err(v).contains("llms_for_routing cannot be empty"));
    let mut v = multimodal_json();
    v["router_name"] = json!("base_router");
    assert!(err(v).contains("router_name 'base_router'"));
    let mut v = multimodal_json();
    v["llms_for_routing"]
        .as_object_mut()
        .unwrap()
        .remove("primary");
    assert!(err(v).contains("Primary LLM key 'primary' not found"));
    let mut v = multimodal_json();
    v["llms_for_routing"]["secondary"] = json!("gpt");
    assert!(err(v).contains("llms_for_routing.secondary"));
    let mut v = multimodal_json();
    v["router_name"] = json!("random_router");
    v["llms_for_routing"]
        .as_object_mut()
        .unwrap()
        .remove("primary");
    assert!(spec_of(&config(v)).unwrap().is_some());
}

#[tokio::test]
async fn images_go_to_primary_and_text_to_secondary() {
    let vision = Fake::new("saw it");
    let text = Fake::new("read it");
    let router = Router::new(
        Strategy::Multimodal,
        vec![
            ("primary".into(), member("gpt-4o", "vision", &vision)),
            ("secondary".into(), member("gpt-3.5-turbo", "text", &text)),
        ],
    )
    .unwrap();
    let llm = Llm::router(config(multimodal_json()), router).unwrap();

    let plain = LlmRequest {
        messages: vec![Message::user("hello")],
        ..LlmRequest::default()
    };
    let r = llm.completion(&plain, None).await.unwrap();
    assert_eq!(r.message.text(), "read it");
    assert_eq!(
        llm.as_router().unwrap().active().as_deref(),
        Some("secondary")
    );

    let mut with_image = Message::user("what is this?");
    with_image
        .content
        .push(Content::Image(ImageContent::new(vec![
            "data:image/png;base64,AAAA".into(),
        ])));
    let pic = LlmRequest {
        messages: vec![with_image],
        ..LlmRequest::default()
    };
    let r = llm.completion(&pic, None).await.unwrap();
    assert_eq!(r.message.text(), "saw it");
    assert_eq!(
        llm.as_router().unwrap().active().as_deref(),
        Some("primary")
    );

    assert_eq!(text.request_count(), 1);
    assert_eq!(vision.request_count(), 1);
    assert!(vision.requests()[0].messages.iter().any(contains_image));
    assert!(!text.requests()[0].messages.iter().any(contains_image));
    // Each member keeps its own metrics; the router's are their sum.
    let answering = llm.answering_llms();
    assert_eq!(answering[0].metrics().response_latencies.len(), 1);
    assert_eq!(answering[1].metrics().response_latencies.len(), 1);
    assert_eq!(llm.metrics().response_latencies.len(), 2);
}

#[tokio::test]
async fn long_requests_go_to_primary() {
    let vision = Fake::new("big");
    let text = Fake::new("small");
    let mut small = member("gpt-3.5-turbo", "text", &text);
    let mut c = small.config().clone();
    c.max_input_tokens = Some(10);
    small = Llm::with_backend(c, text.clone());
    let router = Router::new(
        Strategy::Multimodal,
        vec![
            ("primary".into(), member("gpt-4o", "vision", &vision)),
            ("secondary".into(), small),
        ],
    )
    .unwrap();
    let long = LlmRequest {
        messages: vec![Message::user("x".repeat(400))],
        ..LlmRequest::default()
    };
    let (name, _) = router.select(&long.messages);
    assert_eq!(name, "primary");
    let (name, _) = router.select(&[Message::user("short")]);
    assert_eq!(name, "secondary");
}

#[test]
fn the_random_router_uses_every_member() {
    let fake = Fake::new("any");
    let router = Router::new(
        Strategy::Random,
        vec![
            ("a".into(), member("gpt-4o", "a", &fake)),
            ("b".into(), member("gpt-4o", "b", &fake)),
        ],
    )
    .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.insert(router.select(&[]).0);
    }
    assert_eq!(seen.len(), 2);
}
