//! Conversion of an event list into the messages sent to the LLM.
//!
//! Rules (as the spec describes them):
//! * only LLM-convertible events take part;
//! * `SystemPromptEvent` → `system` message (static prompt, then dynamic context);
//! * `MessageEvent` → its message, with `extended_content` appended;
//! * `ActionEvent`s sharing an `llm_response_id` (parallel tool calls) →
//!   one `assistant` message carrying every call; only the first event's
//!   thought, reasoning and thinking blocks are used;
//! * `ObservationEvent`, `UserRejectObservation`, `AgentErrorEvent` → `tool`
//!   messages answering their call;
//! * `CondensationSummaryEvent` → `user` message with the summary.

use crate::content::{Content, TextContent};
use crate::event::{ActionEvent, Event, EventBody, ObservationEvent};
use crate::message::{Message, Role};
use std::collections::HashSet;

/// Renders an observation as the content the model sees. Tools know how to
/// render their own observations; unknown ones fall back to `content`.
pub trait ObservationRenderer {
    /// The content shown to the model for `obs`.
    fn render(&self, obs: &ObservationEvent) -> Vec<Content>;
}

/// Renders observations by their `content` field only.
#[derive(Debug, Default, Clone, Copy)]
pub struct ContentFieldRenderer;

impl ObservationRenderer for ContentFieldRenderer {
    fn render(&self, obs: &ObservationEvent) -> Vec<Content> {
        obs.observation
            .get("content")
            .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
            .unwrap_or_default()
    }
}

/// Text shown to the model for a rejected action.
pub fn rejection_text(reason: &str) -> String {
    format!("Action rejected by the user: {reason}")
}

fn text_parts(parts: &[TextContent]) -> Vec<Content> {
    parts.iter().cloned().map(Content::Text).collect()
}

fn assistant_for_actions(batch: &[&ActionEvent]) -> Message {
    let first = batch[0];
    let mut m = Message::new(Role::Assistant, text_parts(&first.thought));
    m.reasoning_content = first.reasoning_content.clone();
    m.thinking_blocks = first.thinking_blocks.clone();
    m.responses_reasoning_item = first.responses_reasoning_item.clone();
    m.tool_calls = Some(batch.iter().map(|a| a.tool_call.clone()).collect());
    m
}

/// Converts events (in log order) into LLM messages.
pub fn events_to_messages<'a, I>(events: I, renderer: &dyn ObservationRenderer) -> Vec<Message>
where
    I: IntoIterator<Item = &'a Event>,
{
    let events: Vec<&Event> = events
        .into_iter()
        .filter(|e| e.is_llm_convertible())
        .collect();
    let mut out = Vec::with_capacity(events.len());
    let mut grouped: HashSet<&str> = HashSet::new();
    for (i, ev) in events.iter().enumerate() {
        match &ev.body {
            EventBody::SystemPrompt(sp) => {
                let mut content = vec![Content::Text(sp.system_prompt.clone())];
                if let Some(d) = &sp.dynamic_context {
                    content.push(Content::Text(d.clone()));
                }
                out.push(Message::new(Role::System, content));
            }
            EventBody::Message(me) => {
                let mut m = me.llm_message.clone();
                m.content.extend(text_parts(&me.extended_content));
                out.push(m);
            }
            EventBody::Action(a) => {
                if grouped.contains(a.llm_response_id.as_str()) {
                    continue;
                }
                grouped.insert(a.llm_response_id.as_str());
                let batch: Vec<&ActionEvent> = events[i..]
                    .iter()
                    .filter_map(|e| match &e.body {
                        EventBody::Action(b) if b.llm_response_id == a.llm_response_id => Some(b),
                        _ => None,
                    })
                    .collect();
                out.push(assistant_for_actions(&batch));
            }
            EventBody::Observation(o) => {
                let mut content = renderer.render(o);
                content.extend(text_parts(&o.extended_content));
                out.push(Message::tool_result(&o.tool_call_id, &o.tool_name, content));
            }
            EventBody::UserReject(r) => out.push(Message::tool_result(
                &r.tool_call_id,
                &r.tool_name,
                vec![Content::text(rejection_text(&r.rejection_reason))],
            )),
            EventBody::AgentError(e) => out.push(Message::tool_result(
                &e.tool_call_id,
                &e.tool_name,
                vec![Content::text(e.error.clone())],
            )),
            EventBody::CondensationSummary(s) => out.push(Message::user(s.summary.clone())),
            _ => {}
        }
    }
    out
}
