use super::*;
use openhands_llm::Llm;
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::event::{ActionEvent, MessageEvent, ObservationEvent, SecurityRisk};
use openhands_wire::message::MessageToolCall;
use serde_json::json;
use std::sync::Arc;

fn summarizer(
    turns: Vec<Turn>,
    max_size: usize,
    keep_first: usize,
) -> (Summarizing, Arc<ScriptedLlm>) {
    let backend = Arc::new(ScriptedLlm::from_turns(turns));
    let llm = Llm::with_backend(LlmConfig::new("openai/scripted"), backend.clone());
    (
        Summarizing {
            llm,
            max_size,
            max_tokens: None,
            tokens: crate::tokens::TokenCounter::Estimate,
            keep_first,
            minimum_progress: 0.1,
            hard_reset_max_retries: 3,
            hard_reset_scaling: 0.8,
        },
        backend,
    )
}

fn message(text: &str) -> Event {
    Event::new(EventBody::Message(MessageEvent {
        llm_message: Message::user(text),
        llm_response_id: None,
        activated_skills: Vec::new(),
        extended_content: Vec::new(),
        sender: None,
        critic_result: None,
    }))
}

fn call(resp: &str, id: &str) -> Event {
    Event::new(EventBody::Action(ActionEvent {
        thought: Vec::new(),
        reasoning_content: None,
        thinking_blocks: Vec::new(),
        responses_reasoning_item: None,
        action: Some(json!({})),
        tool_name: "echo".into(),
        tool_call_id: id.into(),
        tool_call: serde_json::from_value::<MessageToolCall>(
            json!({"id": id, "name": "echo", "arguments": "{}", "origin": "completion"}),
        )
        .unwrap_or_else(|e| panic!("{e}")),
        llm_response_id: resp.into(),
        security_risk: SecurityRisk::Unknown,
        critic_result: None,
        summary: None,
    }))
}

fn result(id: &str) -> Event {
    Event::new(EventBody::Observation(ObservationEvent {
        tool_name: "echo".into(),
        tool_call_id: id.into(),
        observation: json!({"content": [{"type": "text", "text": "ok"}]}),
        action_id: String::new(),
        extended_content: Vec::new(),
    }))
}

#[test]
fn size_pressure_keeps_first_and_half_of_max_size_and_never_splits_a_batch() {
    let (s, _) = summarizer(vec![], 10, 2);
    // m m m [a a o o] m m m m m m
    let mut view: Vec<Event> = (0..3).map(|i| message(&format!("m{i}"))).collect();
    view.extend([
        call("r1", "c1"),
        call("r1", "c2"),
        result("c1"),
        result("c2"),
    ]);
    view.extend((0..6).map(|i| message(&format!("n{i}"))));
    let refs: Vec<&Event> = view.iter().collect();
    assert_eq!(s.requirement(&refs, false, None), Some(Requirement::Soft));
    let r = s.forget_range(&view, false, None);
    // tail keeps max_size/2 - keep_first - 1 = 2 events.
    assert_eq!(r, 2..11);
    // A cut inside the batch moves past its results.
    let r = next_boundary(&view, 4);
    assert_eq!(r, 7);
}

#[test]
fn a_request_halves_the_view_and_tokens_force_a_hard_requirement() {
    let (mut s, _) = summarizer(vec![], 240, 2);
    let view: Vec<Event> = (0..20)
        .map(|i| message(&format!("m{i} {}", "x".repeat(400))))
        .collect();
    let refs: Vec<&Event> = view.iter().collect();
    assert_eq!(s.requirement(&refs, false, None), None);
    assert_eq!(s.requirement(&refs, true, None), Some(Requirement::Hard));
    // len/2 - keep_first - 1 = 7 kept at the tail.
    assert_eq!(s.forget_range(&view, true, None), 2..13);
    s.max_tokens = Some(1000);
    assert_eq!(s.requirement(&refs, false, None), Some(Requirement::Hard));
    let r = s.forget_range(&view, false, None);
    let kept: usize = view[r.end..].iter().map(event_tokens).sum::<usize>()
        + view[..r.start].iter().map(event_tokens).sum::<usize>();
    assert!(kept <= 500 + event_tokens(&view[0]), "{kept}");
    // The agent model's own limit counts when smaller.
    s.max_tokens = None;
    assert_eq!(
        s.requirement(&refs, false, Some(500)),
        Some(Requirement::Hard)
    );
}

#[tokio::test]
async fn too_little_progress_skips_soft_and_hard_resets_on_request() {
    // max_size 4, keep_first 0: size pressure forgets 4 of 5 events, below
    // a 99% minimum progress, so nothing happens.
    let (s, backend) = summarizer(vec![Turn::text("everything summarised")], 4, 0);
    let view: Vec<Event> = (0..5).map(|i| message(&format!("m{i}"))).collect();
    let strict = Summarizing {
        minimum_progress: 0.99,
        ..s
    };
    assert!(
        strict
            .condense(&view, None, false, None)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );
    assert_eq!(backend.request_count(), 0);
    // A request cannot be refused: a hard reset summarises everything.
    let c = strict
        .condense(&view, None, true, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("condensation");
    assert_eq!(c.forgotten_event_ids.len(), 5);
    assert_eq!(c.summary_offset, Some(0));
    assert_eq!(c.summary.as_deref(), Some("everything summarised"));
}

/// Refuses prompts longer than `max` characters (a small context window).
struct Narrow {
    inner: ScriptedLlm,
    max: usize,
    sizes: parking_lot::Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl openhands_llm::LlmBackend for Narrow {
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<openhands_llm::TokenCallback>,
    ) -> Result<openhands_llm::LlmResponse, LlmError> {
        let size: usize = request.messages.iter().map(|m| m.text().len()).sum();
        self.sizes.lock().push(size);
        if size > self.max {
            return Err(LlmError::ContextWindowExceeded("too long".into()));
        }
        self.inner.complete(config, request, on_token).await
    }
}

#[tokio::test]
async fn hard_reset_retries_with_shorter_events() {
    let backend = Arc::new(Narrow {
        inner: ScriptedLlm::from_turns(vec![Turn::text("fits now")]),
        max: 1400,
        sizes: parking_lot::Mutex::new(Vec::new()),
    });
    let mut config = LlmConfig::new("openai/scripted");
    config.num_retries = 0;
    let (s, _) = summarizer(vec![], 240, 0);
    let strict = Summarizing {
        llm: Llm::with_backend(config, backend.clone()),
        minimum_progress: 0.99,
        hard_reset_max_retries: 5,
        ..s
    };
    let view: Vec<Event> = (0..3)
        .map(|i| message(&format!("m{i} {}", "y".repeat(500))))
        .collect();
    let c = strict
        .condense(&view, None, true, None)
        .await
        .unwrap_or_else(|e| panic!("{e} {:?}", backend.sizes.lock()))
        .expect("condensation");
    assert_eq!(c.summary.as_deref(), Some("fits now"));
    let sizes = backend.sizes.lock().clone();
    assert!(sizes.len() >= 2, "{sizes:?}");
    // The normal attempt, then the hard reset's, each shorter than the last.
    assert!(sizes[1..].windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
    // Never fitting: the error comes back after the attempts.
    let backend = Arc::new(Narrow {
        inner: ScriptedLlm::from_turns(vec![Turn::text("never")]),
        max: 10,
        sizes: parking_lot::Mutex::new(Vec::new()),
    });
    let mut config = LlmConfig::new("openai/scripted");
    config.num_retries = 0;
    let hopeless = Summarizing {
        llm: Llm::with_backend(config, backend.clone()),
        ..strict
    };
    assert!(hopeless.condense(&view, None, true, None).await.is_err());
    assert_eq!(backend.sizes.lock().len(), 1 + 5);
}
