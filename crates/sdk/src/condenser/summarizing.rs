//! `LLMSummarizingCondenser`: when to condense, what to forget, the summary
//! call and the hard context reset.

use super::{Requirement, Summarizing};
use openhands_llm::{LlmError, LlmRequest};
use openhands_wire::content::Content;
use openhands_wire::event::{Condensation, Event, EventBody};
use openhands_wire::message::Message;

const SUMMARY_INSTRUCTIONS: &str = "You maintain the working memory of a software agent. \
Summarise the events you are given so the agent can continue its task without them: the \
user's goals and constraints, what was done (files changed, commands run and their \
outcomes), what was learned, open problems and the next steps. Keep file paths, names and \
exact error messages. Be concise; use short bullet points.";

/// Estimated tokens of one event (the fallback counter).
#[cfg(test)]
pub(crate) fn event_tokens(e: &Event) -> usize {
    crate::tokens::estimate_event_tokens(e)
}

fn is_result(e: &Event) -> bool {
    matches!(
        e.body,
        EventBody::Observation(_) | EventBody::AgentError(_) | EventBody::UserReject(_)
    )
}

/// Smallest index `>= from` where the view may be cut: never between a
/// tool call and its result, nor inside one response's batch of calls.
fn next_boundary(view: &[Event], from: usize) -> usize {
    let mut i = from;
    while i < view.len() {
        let splits_batch = match (&view[i].body, i.checked_sub(1).map(|p| &view[p].body)) {
            (EventBody::Action(a), Some(EventBody::Action(b))) => {
                a.llm_response_id == b.llm_response_id
            }
            _ => false,
        };
        if !is_result(&view[i]) && !splits_batch {
            return i;
        }
        i += 1;
    }
    view.len()
}

impl Summarizing {
    fn token_limit(&self, agent_limit: Option<usize>) -> Option<usize> {
        match (self.max_tokens, agent_limit.filter(|n| *n > 0)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn requirement(
        &self,
        view: &[&Event],
        requested: bool,
        agent_limit: Option<usize>,
    ) -> Option<Requirement> {
        if requested {
            return Some(Requirement::Hard);
        }
        if let Some(limit) = self.token_limit(agent_limit)
            && view
                .iter()
                .map(|e| self.tokens.event_tokens(e))
                .sum::<usize>()
                > limit
        {
            return Some(Requirement::Hard);
        }
        (view.len() > self.max_size).then_some(Requirement::Soft)
    }

    /// The range of `view` to forget (its start is the summary's offset).
    fn forget_range(
        &self,
        view: &[Event],
        requested: bool,
        agent_limit: Option<usize>,
    ) -> std::ops::Range<usize> {
        let len = view.len() as i64;
        let keep = self.keep_first as i64;
        let mut suffixes: Vec<i64> = Vec::new();
        if requested {
            suffixes.push(len / 2 - keep - 1);
        }
        if view.len() > self.max_size {
            suffixes.push((self.max_size / 2) as i64 - keep - 1);
        }
        if let Some(limit) = self.token_limit(agent_limit) {
            let tokens: Vec<usize> = view.iter().map(|e| self.tokens.event_tokens(e)).collect();
            let total: usize = tokens.iter().sum();
            if total > limit {
                // Keep the longest suffix whose removal still sheds enough.
                let shed = total - limit / 2;
                let mut removed = 0usize;
                let mut idx = self.keep_first.min(view.len());
                while idx < view.len() && removed < shed {
                    removed += tokens[idx];
                    idx += 1;
                }
                suffixes.push((view.len() - idx) as i64);
            }
        }
        let from_tail = suffixes.into_iter().min().unwrap_or(0).clamp(0, len);
        let naive_end = (len - from_tail) as usize;
        let system = view
            .iter()
            .position(|e| matches!(e.body, EventBody::SystemPrompt(_)));
        let protected = system.map_or(self.keep_first, |i| self.keep_first.max(i + 1));
        let start = next_boundary(view, protected.min(view.len()));
        let end = next_boundary(view, naive_end.max(start));
        start..end
    }

    pub(super) async fn condense(
        &self,
        view: &[Event],
        previous_summary: Option<&str>,
        requested: bool,
        agent_limit: Option<usize>,
    ) -> Result<Option<Condensation>, LlmError> {
        let refs: Vec<&Event> = view.iter().collect();
        let Some(requirement) = self.requirement(&refs, requested, agent_limit) else {
            return Ok(None);
        };
        let range = self.forget_range(view, requested, agent_limit);
        let enough =
            !range.is_empty() && (range.len() as f64) >= view.len() as f64 * self.minimum_progress;
        if enough {
            // A failed summary is "no condensation available", as the
            // reference: skipped when soft, a hard reset when hard.
            match self
                .summarize(&view[range.clone()], previous_summary, range.start, None)
                .await
            {
                Ok(c) => return Ok(Some(c)),
                Err(e) => tracing::warn!(error = %e, "condensation summary failed"),
            }
        }
        match requirement {
            Requirement::Soft => Ok(None),
            Requirement::Hard => self.hard_reset(view, previous_summary).await,
        }
    }

    /// Summarises everything after the system prompt, shortening the event
    /// texts after each failed attempt.
    async fn hard_reset(
        &self,
        view: &[Event],
        previous_summary: Option<&str>,
    ) -> Result<Option<Condensation>, LlmError> {
        let start = view
            .iter()
            .position(|e| matches!(e.body, EventBody::SystemPrompt(_)))
            .map_or(0, |i| i + 1);
        let forgotten = &view[start..];
        if forgotten.is_empty() {
            return Ok(None);
        }
        let mut limit: Option<usize> = None;
        let mut last = None;
        for _ in 0..self.hard_reset_max_retries {
            match self
                .summarize(forgotten, previous_summary, start, limit)
                .await
            {
                Ok(c) => return Ok(Some(c)),
                Err(e) => {
                    tracing::warn!(error = %e, "hard context reset summary failed; shortening events");
                    let longest = limit.unwrap_or_else(|| {
                        forgotten
                            .iter()
                            .map(|e| event_line(e, None).len())
                            .max()
                            .unwrap_or(0)
                    });
                    limit = Some(((longest as f64) * self.hard_reset_scaling) as usize);
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| LlmError::MalformedResponse("hard context reset failed".into())))
    }

    async fn summarize(
        &self,
        forgotten: &[Event],
        previous_summary: Option<&str>,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<Condensation, LlmError> {
        let prompt = summary_prompt(forgotten, previous_summary, limit);
        let request = LlmRequest {
            messages: vec![Message::system(SUMMARY_INSTRUCTIONS), Message::user(prompt)],
            tools: Vec::new(),
            conversation_id: None,
        };
        let response = self.llm.completion(&request, None).await?;
        Ok(Condensation {
            forgotten_event_ids: forgotten
                .iter()
                .filter(|e| !e.id.ends_with("-summary"))
                .map(|e| e.id.clone())
                .collect(),
            summary: Some(response.message.text()),
            summary_offset: Some(offset),
            llm_response_id: response.id,
        })
    }
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

fn event_line(e: &Event, limit: Option<usize>) -> String {
    let cap = |default: usize| limit.map_or(default, |l| l.min(default));
    let line = match &e.body {
        EventBody::Message(m) => format!(
            "[{}] {}",
            m.llm_message.role.as_str(),
            short(&m.llm_message.text(), cap(2000))
        ),
        EventBody::Action(a) => format!(
            "[action {}] {}",
            a.tool_name,
            short(&a.tool_call.arguments, cap(1000))
        ),
        EventBody::Observation(o) => {
            let text = o
                .observation
                .get("content")
                .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
                .map(|c| Content::join_text(&c))
                .unwrap_or_default();
            format!("[result {}] {}", o.tool_name, short(&text, cap(1500)))
        }
        EventBody::AgentError(a) => {
            format!("[error {}] {}", a.tool_name, short(&a.error, cap(500)))
        }
        EventBody::UserReject(r) => {
            format!("[rejected {}] {}", r.tool_name, r.rejection_reason)
        }
        EventBody::CondensationSummary(s) => {
            format!("[earlier summary] {}", short(&s.summary, cap(4000)))
        }
        _ => String::new(),
    };
    match limit {
        Some(l) => short(&line, l.max(16)),
        None => line,
    }
}

fn summary_prompt(events: &[Event], previous: Option<&str>, limit: Option<usize>) -> String {
    let mut out = String::new();
    if let Some(p) = previous {
        out.push_str("<PREVIOUS_SUMMARY>\n");
        out.push_str(p);
        out.push_str("\n</PREVIOUS_SUMMARY>\n\n");
    }
    out.push_str("<EVENTS>\n");
    for e in events {
        let line = event_line(e, limit);
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str("</EVENTS>");
    out
}

#[cfg(test)]
#[path = "summarizing_tests.rs"]
mod tests;
