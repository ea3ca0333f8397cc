//! Condensation: the condenser's turn in a step (when it asks for one, or
//! a `CondensationRequest` is pending) and `condense` on request.

use super::error::ConversationError;
use super::local::LocalConversation;
use super::view::with_view;
use openhands_wire::event::{Event, EventBody, SourceType};

/// `condense` on a conversation whose view holds nothing but the system prompt.
pub const NOTHING_TO_CONDENSE: &str =
    "Cannot condense conversation: there are no events to condense";

/// Whether a `CondensationRequest` came after the last `Condensation`.
pub(crate) fn pending_request(events: &[Event]) -> bool {
    for e in events.iter().rev() {
        match e.body {
            EventBody::CondensationRequest => return true,
            EventBody::Condensation(_) => return false,
            _ => {}
        }
    }
    false
}

impl LocalConversation {
    /// Condenses the history now (`CondensationRequest`, then the
    /// `Condensation`). Fails when the agent has no condenser that serves
    /// requests.
    pub async fn condense(&self) -> Result<(), ConversationError> {
        self.start_mcp().await?;
        let rt = self.runtime()?;
        let Some(condenser) = rt.condenser().filter(|c| c.handles_requests()) else {
            return Err(ConversationError::Invalid(
                "This conversation's agent has no condenser that handles condensation requests."
                    .into(),
            ));
        };
        self.ensure_initialized_async().await?;
        if self.condensable_events() == 0 {
            return Err(ConversationError::Invalid(NOTHING_TO_CONDENSE.into()));
        }
        self.emit_async(Event::with_source(
            SourceType::Environment,
            EventBody::CondensationRequest,
        ))
        .await?;
        if self.maybe_condense(condenser).await? {
            Ok(())
        } else {
            // Everything left is protected (system prompt, `keep_first`).
            Err(ConversationError::Invalid(NOTHING_TO_CONDENSE.into()))
        }
    }

    /// Whether the agent's condenser serves condensation requests (`None`
    /// without a condenser or when the agent cannot be set up).
    pub fn condenser_handles_requests(&self) -> Option<bool> {
        let rt = self.runtime().ok()?;
        rt.condenser().map(|c| c.handles_requests())
    }

    /// Events of the LLM view a condensation could forget (everything but
    /// the system prompt).
    pub fn condensable_events(&self) -> usize {
        self.with_branch(|events| {
            super::view::with_view(events, |view, _| {
                view.iter()
                    .filter(|e| !matches!(e.body, EventBody::SystemPrompt(_)))
                    .count()
            })
        })
    }

    /// Condenses the view when the condenser asks for it; true when a
    /// `Condensation` was recorded (the step ends there).
    pub(crate) async fn maybe_condense(
        &self,
        condenser: &crate::condenser::Condenser,
    ) -> Result<bool, ConversationError> {
        let agent_limit = self
            .inner
            .agent
            .with_agent(|a| openhands_llm::model_info::context_window(a.llm().config()))
            as usize;
        let agent_limit = (agent_limit > 0).then_some(agent_limit);
        let (requirement, requested) = self.with_branch(|events| {
            let requested = pending_request(events);
            (
                with_view(events, |view, _| {
                    condenser.requirement(view, requested, agent_limit)
                }),
                requested,
            )
        });
        if requirement.is_none() {
            return Ok(false);
        }
        let (view, previous) = self.with_branch(|events| {
            with_view(events, |view, summary| {
                let owned: Vec<Event> = view.iter().map(|e| (*e).clone()).collect();
                (owned, summary.map(str::to_string))
            })
        });
        match condenser
            .condense(&view, previous.as_deref(), requested, agent_limit)
            .await?
        {
            Some(condensation) => {
                self.emit_async(Event::with_source(
                    SourceType::Environment,
                    EventBody::Condensation(condensation),
                ))
                .await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
