//! Goals: pursue an objective until a judge confirms it is provably done.
//!
//! A plain `run()` ends when the agent *believes* it is finished. `run_goal`
//! is stricter: after every run a judge LLM audits the transcript for
//! evidence (file contents, command output) and, while something is missing,
//! the agent gets a follow-up turn naming it, up to an iteration cap.
//!
//! With `LLM_API_KEY` the judge is the environment's model. Offline it is a
//! stand-in that accepts the goal once the test's output appears in the transcript.

use async_trait::async_trait;
use openhands::llm::{LlmBackend, LlmError, LlmRequest, LlmResponse, TokenCallback};
use openhands::prelude::*;
use openhands::sdk::goal::run_goal;
use openhands::testing::{llm_from_env_or_script, uses_real_llm};
use openhands::wire::metrics::TokenUsage;
use std::sync::Arc;

/// The offline judge: complete once the transcript shows the test's output.
struct EvidenceJudge;

#[async_trait]
impl LlmBackend for EvidenceJudge {
    async fn complete(
        &self,
        _config: &openhands::LlmConfig,
        request: &LlmRequest,
        _on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let transcript = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        let verdict = if transcript.contains("all 15 lines correct") {
            r#"{"score": 1.0, "complete": true, "missing": ""}"#
        } else {
            r#"{"score": 0.4, "complete": false, "missing": "no test run shows that fizzbuzz.py works"}"#
        };
        Ok(LlmResponse {
            id: "judge".into(),
            message: openhands::event::Message::assistant(verdict),
            usage: TokenUsage::default(),
            finish_reason: Some("stop".into()),
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/54_goal_completion_loop.json"))?;
    let judge = if uses_real_llm() {
        LlmBuilder::from_env().usage_id("judge").build()?
    } else {
        LlmBuilder::new("offline/judge")
            .usage_id("judge")
            .build_with_backend(Arc::new(EvidenceJudge))
    };
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Message(m) = &event.body
                && m.llm_message.role == openhands::event::Role::User
            {
                println!(
                    "user: {}",
                    m.llm_message.text().lines().next().unwrap_or("")
                );
            }
        })
        .build_local()?;

    let objective = "Write fizzbuzz.py printing FizzBuzz for 1..15 and prove it works \
                     by running a test of its output.";
    let outcome = run_goal(&conversation, objective, &judge, 4).await?;
    println!(
        "goal {:?} after {} audit(s), score {:.1}",
        outcome.status, outcome.iterations, outcome.verdict.score
    );
    Ok(())
}
