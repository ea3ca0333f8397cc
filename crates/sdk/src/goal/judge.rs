//! One audit: the judge LLM reads the objective and the transcript and
//! answers with a [`GoalVerdict`].

use super::verdict::GoalVerdict;
use openhands_llm::{Llm, LlmError, LlmRequest};
use openhands_wire::message::{Message, Role};

/// The judge's instructions: what counts as evidence and the answer's form.
const JUDGE_INSTRUCTIONS: &str = "You decide whether an AI software agent has fully achieved \
    a GOAL. Work out the concrete requirements the objective implies. For each one, find \
    evidence in the transcript that settles it: file contents, command output or test \
    results the agent actually produced. A requirement the agent only claims, or whose \
    evidence is missing or unclear, is NOT met.\n\n\
    Answer with one JSON object and nothing else, exactly of this form:\n\
    {\"score\": <number from 0.0 to 1.0: how likely the WHOLE objective is provably done>, \
    \"complete\": <true or false>, \"missing\": \"<what remains, briefly; empty when complete>\"}";

/// Asks `judge` whether `objective` is met by what `transcript` shows.
/// System messages are left out: they carry no evidence and would only
/// cost tokens on every audit. The call never streams.
pub async fn judge_goal(
    judge: &Llm,
    objective: &str,
    transcript: &[Message],
) -> Result<GoalVerdict, LlmError> {
    let request = LlmRequest {
        messages: vec![
            Message::system(JUDGE_INSTRUCTIONS),
            Message::user(format!(
                "<objective>\n{objective}\n</objective>\n\n<transcript>\n{}\n</transcript>",
                render_transcript(transcript)
            )),
        ],
        tools: Vec::new(),
        conversation_id: None,
    };
    let answer = judge.completion(&request, None).await?;
    Ok(GoalVerdict::parse(&answer.message.text()))
}

/// `role: text` turns, blank ones and system messages left out.
pub fn render_transcript(messages: &[Message]) -> String {
    messages
        .iter()
        .filter(|m| m.role != Role::System)
        .filter_map(|m| {
            let text = m.text();
            let text = text.trim();
            (!text.is_empty()).then(|| format!("{}: {text}", m.role.as_str()))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
