//! Goals through the SDK: the judge's verdicts drive follow-up turns in the
//! same conversation until the objective is complete or the cap is hit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_trait::async_trait;
use common::*;
use openhands_llm::{Llm, LlmBackend, LlmError, LlmRequest, LlmResponse, TokenCallback};
use openhands_sdk::goal::{GoalStatusName, run_goal};
use openhands_wire::LlmConfig;
use openhands_wire::event::EventBody;
use openhands_wire::message::{Message, Role};
use openhands_wire::metrics::TokenUsage;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A judge answering `verdicts` in order (the scripted LLM picks turns by
/// position in the history, and every audit is a fresh two-message
/// request), recording what it was asked.
struct Judge {
    verdicts: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<LlmRequest>>,
}

impl Judge {
    fn requests(&self) -> Vec<LlmRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl LlmBackend for Judge {
    async fn complete(
        &self,
        _config: &LlmConfig,
        request: &LlmRequest,
        _on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        let text = self
            .verdicts
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| "no more verdicts".into());
        Ok(LlmResponse {
            id: "judge".into(),
            message: Message::assistant(text),
            usage: TokenUsage::default(),
            finish_reason: Some("stop".into()),
        })
    }
}

fn judge(verdicts: &[&str]) -> (Llm, Arc<Judge>) {
    let mut config = LlmConfig::new("openai/judge");
    config.usage_id = "judge".into();
    config.num_retries = 1;
    let backend = Arc::new(Judge {
        verdicts: Mutex::new(verdicts.iter().map(|v| v.to_string()).collect()),
        requests: Mutex::new(Vec::new()),
    });
    (Llm::with_backend(config, backend.clone()), backend)
}

fn user_messages(f: &Fixture) -> Vec<String> {
    f.conversation
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Message(m) if m.llm_message.role == Role::User => Some(m.llm_message.text()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_goal_reprompts_with_what_is_missing_until_the_judge_is_satisfied() {
    let f = fixture(
        vec![
            echo("first try"),
            finish("done"),
            echo("tests pass"),
            finish("really done"),
        ],
        |_| {},
    );
    let (judge, judged) = judge(&[
        r#"{"score": 0.3, "complete": false, "missing": "no test output yet"}"#,
        r#"{"score": 1.0, "complete": true, "missing": ""}"#,
    ]);
    let outcome = run_goal(&f.conversation, "make the tests pass", &judge, 5)
        .await
        .unwrap();
    assert_eq!(outcome.status, GoalStatusName::Complete);
    assert_eq!(outcome.iterations, 2);
    assert!(outcome.verdict.complete);

    let users = user_messages(&f);
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], "make the tests pass");
    assert!(users[1].contains("no test output yet"), "{}", users[1]);

    // The judge saw the objective and the work, never the system prompt.
    let requests = judged.requests();
    assert_eq!(requests.len(), 2);
    let audit = requests[1].messages[1].text();
    assert!(
        audit.contains("<objective>\nmake the tests pass\n</objective>"),
        "{audit}"
    );
    assert!(audit.contains("tests pass"), "{audit}");
    assert!(audit.contains("user: make the tests pass"), "{audit}");
    assert!(!audit.contains("system:"), "{audit}");
    assert!(requests[1].tools.is_empty());
}

#[tokio::test]
async fn a_goal_the_judge_never_accepts_is_capped() {
    let f = fixture(vec![finish("one"), finish("two")], |_| {});
    let (judge, _) = judge(&[
        r#"{"score": 0.1, "complete": false, "missing": "everything"}"#,
        "I cannot tell.",
    ]);
    let outcome = run_goal(&f.conversation, "do it", &judge, 2).await.unwrap();
    assert_eq!(outcome.status, GoalStatusName::Capped);
    assert_eq!(outcome.iterations, 2);
    assert!(!outcome.verdict.complete);
    assert_eq!(
        outcome.verdict.missing,
        "Judge verdict could not be parsed."
    );
    assert_eq!(user_messages(&f).len(), 2);
}

#[tokio::test]
async fn an_empty_objective_sends_nothing() {
    let f = fixture(vec![finish("x")], |_| {});
    let (judge, judged) = judge(&[]);
    assert!(run_goal(&f.conversation, " ", &judge, 3).await.is_err());
    assert!(user_messages(&f).is_empty());
    assert!(judged.requests().is_empty());
}
