//! Condensers keep the LLM's view of a long conversation within limits.
//!
//! * `NoOpCondenser` never condenses;
//! * `LLMSummarizingCondenser` (reference defaults `max_size` 240, `keep_first` 2)
//!   condenses when the view holds more than `max_size` events, or when a
//!   `CondensationRequest` is pending (the agent adds one when the model's
//!   context window overflows, applications can add one by hand): the first
//!   `keep_first` events and the newest events stay, the middle is summarised
//!   by an LLM into a `Condensation` event (forgotten ids + summary + offset);
//! * `PipelineCondenser` asks each of its condensers in turn.
//!
//! The condensation itself is an event, so a resumed conversation rebuilds
//! exactly the same view.

use openhands_llm::{Llm, LlmError, LlmRequest};
use openhands_wire::content::Content;
use openhands_wire::event::{Condensation, Event, EventBody};
use openhands_wire::message::Message;
use serde_json::Value;

/// A configured condenser.
#[derive(Clone)]
pub enum Condenser {
    /// Never condenses.
    NoOp,
    /// Summarises the middle of the view with an LLM.
    LlmSummarizing {
        /// LLM used for summaries.
        llm: Llm,
        /// View size that triggers condensation.
        max_size: usize,
        /// Leading events always kept.
        keep_first: usize,
    },
    /// Several condensers, first one that condenses wins.
    Pipeline(Vec<Condenser>),
}

impl std::fmt::Debug for Condenser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condenser::NoOp => f.write_str("NoOpCondenser"),
            Condenser::LlmSummarizing {
                max_size,
                keep_first,
                ..
            } => f
                .debug_struct("LLMSummarizingCondenser")
                .field("max_size", max_size)
                .field("keep_first", keep_first)
                .finish(),
            Condenser::Pipeline(c) => f.debug_tuple("PipelineCondenser").field(c).finish(),
        }
    }
}

/// Errors building a condenser from its JSON configuration.
#[derive(Debug, thiserror::Error)]
pub enum CondenserError {
    /// The configuration is invalid.
    #[error("invalid condenser configuration: {0}")]
    Invalid(String),
    /// The condenser's LLM cannot be built.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl Condenser {
    /// Builds a condenser from its JSON (`{"kind":"LLMSummarizingCondenser", "llm":{...}, ...}`).
    /// The agent's LLM is reused (with usage id `condenser`) when the
    /// condenser names the same model, so both share one client.
    pub fn from_json(value: &Value, agent_llm: &Llm) -> Result<Self, CondenserError> {
        match value.get("kind").and_then(Value::as_str) {
            Some("NoOpCondenser") => Ok(Condenser::NoOp),
            Some("PipelineCondenser") => {
                let items = value
                    .get("condensers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| CondenserError::Invalid("`condensers` list missing".into()))?;
                Ok(Condenser::Pipeline(
                    items
                        .iter()
                        .map(|c| Condenser::from_json(c, agent_llm))
                        .collect::<Result<_, _>>()?,
                ))
            }
            Some("LLMSummarizingCondenser") | None if value.get("llm").is_some() => {
                let max_size =
                    value.get("max_size").and_then(Value::as_u64).unwrap_or(240) as usize;
                let keep_first =
                    value.get("keep_first").and_then(Value::as_u64).unwrap_or(2) as usize;
                if max_size < keep_first + 4 {
                    return Err(CondenserError::Invalid(format!(
                        "max_size ({max_size}) must exceed keep_first ({keep_first}) by at least 4"
                    )));
                }
                let mut config: openhands_wire::LlmConfig = value
                    .get("llm")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|e| CondenserError::Invalid(e.to_string()))?
                    .unwrap_or_else(|| agent_llm.config().clone());
                let llm = if config.model == agent_llm.config().model
                    && config.base_url == agent_llm.config().base_url
                {
                    agent_llm.with_usage_id(config.usage_id.clone())
                } else {
                    if config
                        .api_key
                        .as_ref()
                        .is_none_or(|k| k.is_redacted_or_empty())
                    {
                        config.api_key = agent_llm.config().api_key.clone();
                    }
                    Llm::new(config)?
                };
                Ok(Condenser::LlmSummarizing {
                    llm,
                    max_size,
                    keep_first,
                })
            }
            Some(other) => Err(CondenserError::Invalid(format!(
                "unknown condenser kind '{other}'"
            ))),
            None => Err(CondenserError::Invalid("condenser has no `kind`".into())),
        }
    }

    /// Whether a view of `len` events (with a pending request or not) would
    /// be condensed; cheap, so callers can skip building the view.
    pub fn wants(&self, len: usize, requested: bool) -> bool {
        match self {
            Condenser::NoOp => false,
            Condenser::LlmSummarizing { max_size, .. } => requested || len > *max_size,
            Condenser::Pipeline(c) => c.iter().any(|x| x.wants(len, requested)),
        }
    }

    /// Whether this condenser can serve a `CondensationRequest`.
    pub fn handles_requests(&self) -> bool {
        match self {
            Condenser::NoOp => false,
            Condenser::LlmSummarizing { .. } => true,
            Condenser::Pipeline(c) => c.iter().any(Condenser::handles_requests),
        }
    }

    /// Decides on `view` (LLM-visible events, oldest first; `requested` when
    /// a `CondensationRequest` is pending) and returns the condensation to
    /// record, if any.
    pub async fn condense(
        &self,
        view: &[Event],
        previous_summary: Option<&str>,
        requested: bool,
    ) -> Result<Option<Condensation>, LlmError> {
        match self {
            Condenser::NoOp => Ok(None),
            Condenser::Pipeline(items) => {
                for c in items {
                    if let Some(done) =
                        Box::pin(c.condense(view, previous_summary, requested)).await?
                    {
                        return Ok(Some(done));
                    }
                }
                Ok(None)
            }
            Condenser::LlmSummarizing {
                llm,
                max_size,
                keep_first,
            } => {
                if !requested && view.len() <= *max_size {
                    return Ok(None);
                }
                let Some(range) = forget_range(view, *keep_first, *max_size) else {
                    return Ok(None);
                };
                let forgotten = &view[range.clone()];
                let prompt = summary_prompt(forgotten, previous_summary);
                let request = LlmRequest {
                    messages: vec![Message::system(SUMMARY_INSTRUCTIONS), Message::user(prompt)],
                    tools: Vec::new(),
                    conversation_id: None,
                };
                let response = llm.completion(&request, None).await?;
                Ok(Some(Condensation {
                    forgotten_event_ids: forgotten
                        .iter()
                        .filter(|e| !e.id.ends_with("-summary"))
                        .map(|e| e.id.clone())
                        .collect(),
                    summary: Some(response.message.text()),
                    summary_offset: Some(*keep_first),
                    llm_response_id: response.id,
                }))
            }
        }
    }

    /// The LLM used for summaries, if any.
    pub fn llm(&self) -> Option<&Llm> {
        match self {
            Condenser::LlmSummarizing { llm, .. } => Some(llm),
            Condenser::Pipeline(c) => c.iter().find_map(Condenser::llm),
            Condenser::NoOp => None,
        }
    }
}

const SUMMARY_INSTRUCTIONS: &str = "You maintain the working memory of a software agent. \
Summarise the events you are given so the agent can continue its task without them: the \
user's goals and constraints, what was done (files changed, commands run and their \
outcomes), what was learned, open problems and the next steps. Keep file paths, names and \
exact error messages. Be concise; use short bullet points.";

/// Events `[keep_first, end)` to forget so the view shrinks to about half of
/// `max_size`, never separating a tool call from its result.
fn forget_range(
    view: &[Event],
    keep_first: usize,
    max_size: usize,
) -> Option<std::ops::Range<usize>> {
    let target = (max_size / 2).max(keep_first + 2);
    let keep_last = target.saturating_sub(keep_first + 1);
    if view.len() <= keep_first + 1 {
        return None;
    }
    let mut end = view.len().saturating_sub(keep_last).max(keep_first + 1);
    if end > view.len() {
        end = view.len();
    }
    // Do not leave a tool result whose call was forgotten.
    while end < view.len()
        && matches!(
            view[end].body,
            EventBody::Observation(_) | EventBody::AgentError(_) | EventBody::UserReject(_)
        )
    {
        end += 1;
    }
    // Keep at least the last event so the model sees where it is.
    if end >= view.len() && view.len() > keep_first + 1 {
        end = view.len() - 1;
        while end > keep_first
            && matches!(
                view[end].body,
                EventBody::Observation(_) | EventBody::AgentError(_) | EventBody::UserReject(_)
            )
        {
            end -= 1;
        }
    }
    (end > keep_first).then_some(keep_first..end)
}

fn short(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        text.to_string()
    } else {
        let head: String = text.chars().take(max).collect();
        format!("{head}…")
    }
}

fn summary_prompt(events: &[Event], previous: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(p) = previous {
        out.push_str("<PREVIOUS_SUMMARY>\n");
        out.push_str(p);
        out.push_str("\n</PREVIOUS_SUMMARY>\n\n");
    }
    out.push_str("<EVENTS>\n");
    for e in events {
        let line = match &e.body {
            EventBody::Message(m) => format!(
                "[{}] {}",
                m.llm_message.role.as_str(),
                short(&m.llm_message.text(), 2000)
            ),
            EventBody::Action(a) => format!(
                "[action {}] {}",
                a.tool_name,
                short(&a.tool_call.arguments, 1000)
            ),
            EventBody::Observation(o) => {
                let text = o
                    .observation
                    .get("content")
                    .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
                    .map(|c| Content::join_text(&c))
                    .unwrap_or_default();
                format!("[result {}] {}", o.tool_name, short(&text, 1500))
            }
            EventBody::AgentError(a) => format!("[error {}] {}", a.tool_name, short(&a.error, 500)),
            EventBody::UserReject(r) => {
                format!("[rejected {}] {}", r.tool_name, r.rejection_reason)
            }
            EventBody::CondensationSummary(s) => format!("[earlier summary] {}", s.summary),
            _ => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str("</EVENTS>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::EventBody;

    fn ev(body: EventBody) -> Event {
        Event::new(body)
    }

    #[test]
    fn forget_range_keeps_first_and_tail_and_pairs() {
        let view: Vec<Event> = (0..10).map(|_| ev(EventBody::Pause)).collect();
        assert_eq!(forget_range(&view, 2, 8), Some(2..9));
        let small: Vec<Event> = (0..3).map(|_| ev(EventBody::Pause)).collect();
        assert_eq!(forget_range(&small, 2, 8), None);
    }
}
