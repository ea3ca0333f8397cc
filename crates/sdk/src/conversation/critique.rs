//! The agent's critic consulted by the run loop: the result on the
//! evaluated event (`critic_result`, as the reference records it) and, after
//! a `finish`, iterative refinement (a follow-up user message instead of
//! finishing, counted in `agent_state`).

use super::core::state_update;
use super::error::ConversationError;
use super::local::LocalConversation;
use super::view::with_view;
use crate::agent::AgentRuntime;
use crate::critic::{Critic, Evaluation, ITERATION_KEY};
use openhands_wire::content::Content;
use openhands_wire::convert::{ContentFieldRenderer, events_to_messages};
use openhands_wire::event::{Event, EventBody, MessageEvent, SourceType};
use openhands_wire::message::Message;
use serde_json::{Value, json};

fn role_and_text(m: &Message) -> (String, String) {
    let role = serde_json::to_value(m.role)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let text: Vec<&str> = m
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    (role, text.join("\n"))
}

impl LocalConversation {
    /// The agent's critic, if one is configured and usable.
    pub(crate) fn critic(&self) -> Option<Critic> {
        let config = self.inner.agent.with_agent(|a| a.spec().critic.clone())?;
        match Critic::from_json(&config) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "critic unusable; not consulted");
                None
            }
        }
    }

    /// Evaluates `candidate` (the event about to be recorded) after the
    /// conversation so far; the wire `critic_result`, or `None` when the
    /// critic failed (logged, as the reference).
    pub(crate) async fn critique(
        &self,
        critic: &Critic,
        runtime: &AgentRuntime,
        candidate: &Event,
    ) -> Option<Value> {
        let mut messages: Vec<(String, String)> = self
            .llm_messages(runtime)
            .iter()
            .map(role_and_text)
            .collect();
        messages.extend(
            events_to_messages(std::iter::once(candidate), &ContentFieldRenderer)
                .iter()
                .map(role_and_text),
        );
        let mut events: Vec<Event> = self.with_branch(|events| {
            with_view(events, |view, _| {
                view.iter().map(|e| (*e).clone()).collect()
            })
        });
        events.push(candidate.clone());
        let tools: Vec<Value> = runtime
            .schemas()
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        let input = Evaluation {
            events: &events,
            messages: &messages,
            tools: &tools,
        };
        match critic.evaluate(&input).await {
            Ok(r) => {
                tracing::info!(
                    score = r.score,
                    critic = critic.kind_name(),
                    "critic evaluation"
                );
                Some(r.to_json())
            }
            Err(e) => {
                tracing::error!(error = %e, critic = critic.kind_name(), "critic evaluation failed");
                None
            }
        }
    }

    /// After a `finish` whose critic result is `result`: a follow-up user
    /// message when refinement calls for one (the run goes on), else the
    /// conversation is finished.
    pub(crate) async fn finish_or_refine(
        &self,
        critic: Option<&Critic>,
        result: Option<&Value>,
    ) -> Result<(), ConversationError> {
        let parsed = result.and_then(crate::critic::CriticResult::from_json);
        let done = self
            .inner
            .log
            .read(|c| {
                c.state
                    .agent_state
                    .get(ITERATION_KEY)
                    .and_then(Value::as_u64)
            })
            .unwrap_or(0);
        let Some((text, next)) = critic.and_then(|c| c.refinement_step(parsed.as_ref(), done))
        else {
            self.set_status(openhands_wire::state::ExecutionStatus::Finished)
                .await?;
            return Ok(());
        };
        tracing::info!(iteration = next, "iterative refinement: follow-up turn");
        let followup = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: Message::user(text),
                llm_response_id: None,
                activated_skills: Vec::new(),
                extended_content: Vec::new(),
                sender: None,
                critic_result: None,
            }),
        );
        self.commit_async(true, move |c| {
            let state = c.state_mut();
            state.agent_state.insert(ITERATION_KEY.into(), json!(next));
            let value = Value::Object(state.agent_state.clone());
            vec![state_update("agent_state", value), followup]
        })
        .await?;
        Ok(())
    }
}
