//! The run loop: steps until the agent finishes, pauses, waits for
//! confirmation, gets stuck, fails or reaches the iteration limit; the
//! statistics announced after each step, Stop hooks when it finishes, a
//! message arriving while it finishes keeping it going. One run at a time
//! ([`super::run_control`]).

use super::core::state_update;
use super::error::{ConversationError, error_code};
use super::local::LocalConversation;
use super::stuck::{StuckDetector, StuckPattern};
use openhands_llm::TokenCallback;
use openhands_wire::event::{
    ConversationErrorEvent, ErrorClassification, Event, EventBody, SourceType,
};
use openhands_wire::state::ExecutionStatus;

impl LocalConversation {
    /// Runs the agent loop until it finishes, pauses, waits for confirmation,
    /// gets stuck, fails, or reaches the iteration limit. Returns the final
    /// status. Errors of the run itself are recorded as events and status;
    /// `Err` is returned only when the run could not start.
    pub async fn run(&self) -> Result<ExecutionStatus, ConversationError> {
        use tracing::Instrument;
        let span = crate::telemetry::run_span(&self.id());
        if !span.is_disabled() {
            let root = self.inner.trace.root();
            crate::telemetry::observability::join_root(&span, &root);
        }
        let mut steps = 0;
        let result = self.run_steps(&mut steps).instrument(span.clone()).await;
        crate::telemetry::record_run(&span, &result, steps);
        result
    }

    /// [`LocalConversation::run`] without its span; `steps` counts the
    /// agent steps taken.
    async fn run_steps(&self, steps: &mut u32) -> Result<ExecutionStatus, ConversationError> {
        use tracing::Instrument;
        let Some(_guard) = self.inner.run.try_start() else {
            return Err(ConversationError::AlreadyRunning);
        };
        if let Err(e) = self.ensure_initialized_async().await {
            // Recorded so clients see why nothing ran (an ACP server that
            // did not start recorded its own error).
            if !matches!(e, ConversationError::Acp(_)) {
                self.fail(&e).await?;
            }
            return Err(e);
        }
        let cancel = self.inner.run.fresh_cancel();
        let start = self.status();
        match start {
            ExecutionStatus::Finished => return Ok(start),
            ExecutionStatus::Deleting => return Ok(start),
            _ => self.set_status(ExecutionStatus::Running).await?,
        }
        let (max_iterations, stuck_on, thresholds) = self.inner.log.read(|c| {
            (
                c.state.max_iterations.max(1),
                c.state.stuck_detection,
                c.state.stuck_detection_thresholds.unwrap_or_default(),
            )
        });
        let detector = StuckDetector::new(thresholds);
        let mut iteration: u32 = 0;
        let mut last_stats = self.stats().snapshot_value();
        loop {
            if self.is_closed() || cancel.is_cancelled() {
                break;
            }
            match self.status() {
                ExecutionStatus::Paused
                | ExecutionStatus::Stuck
                | ExecutionStatus::Error
                | ExecutionStatus::Finished
                | ExecutionStatus::Idle
                | ExecutionStatus::Deleting => break,
                ExecutionStatus::WaitingForConfirmation => {
                    self.set_status(ExecutionStatus::Running).await?;
                }
                ExecutionStatus::Running => {}
            }
            if stuck_on {
                let pattern: Option<StuckPattern> = self.with_branch(|ev| detector.check(ev));
                if let Some(p) = pattern {
                    tracing::warn!(conversation = %self.id(), "stuck: {}", p.describe());
                    self.set_status(ExecutionStatus::Stuck).await?;
                    break;
                }
            }
            let marker = self.inner.run.user_messages();
            *steps += 1;
            let step_span = crate::telemetry::step_span(&self.id(), *steps);
            let outcome = self.step(&cancel).instrument(step_span.clone()).await;
            if let Err(e) = &outcome
                && !matches!(e, ConversationError::Interrupted)
            {
                crate::telemetry::record_error(&step_span, &e.to_string());
            }
            let full = self.stats();
            let stats = full.snapshot_value();
            if stats != last_stats {
                let value = stats.clone();
                self.commit_async(true, move |c| {
                    c.state_mut().stats = full;
                    vec![state_update("stats", value)]
                })
                .await?;
                last_stats = stats;
            }
            match outcome {
                Ok(()) => {}
                Err(ConversationError::Interrupted) => break,
                Err(e) => {
                    self.fail(&e).await?;
                    break;
                }
            }
            iteration += 1;
            let status = self.status();
            if status == ExecutionStatus::Finished && self.inner.run.user_messages() != marker {
                // A message arrived while the agent was finishing: keep going.
                self.set_status(ExecutionStatus::Running).await?;
                continue;
            }
            if status == ExecutionStatus::Finished && !self.stop_hooks().await? {
                // A Stop hook sent the agent back to work.
                continue;
            }
            if status == ExecutionStatus::WaitingForConfirmation {
                break;
            }
            if iteration >= max_iterations && status == ExecutionStatus::Running {
                let ev = Event::with_source(
                    SourceType::Environment,
                    EventBody::ConversationError(ConversationErrorEvent {
                        code: "MaxIterationsReached".into(),
                        detail: format!(
                            "Agent reached maximum iterations limit ({max_iterations})."
                        ),
                        classification: Some(ErrorClassification::new(
                            "agent_action",
                            false,
                            "none",
                        )),
                    }),
                );
                self.commit_async(true, move |c| {
                    let mut out = vec![ev];
                    out.extend(c.set_status(ExecutionStatus::Error));
                    out
                })
                .await?;
                break;
            }
        }
        Ok(self.status())
    }

    /// Records a failed run: a `ConversationErrorEvent` and status `error`.
    async fn fail(&self, e: &ConversationError) -> Result<(), ConversationError> {
        let (kind, retryable, action) = match e {
            ConversationError::Llm(l) => l.classification(),
            _ => ("internal", false, "none"),
        };
        let detail = match e {
            ConversationError::Llm(openhands_llm::LlmError::Authentication(_)) => {
                "Your LLM API key appears to be invalid or has expired.".to_string()
            }
            other => other.to_string(),
        };
        let ev = Event::with_source(
            SourceType::Environment,
            EventBody::ConversationError(ConversationErrorEvent {
                code: error_code(e),
                detail,
                classification: Some(ErrorClassification::new(kind, retryable, action)),
            }),
        );
        self.commit_async(true, move |c| {
            let mut out = vec![ev];
            out.extend(c.set_status(ExecutionStatus::Error));
            out
        })
        .await?;
        Ok(())
    }

    /// Runs to completion from synchronous code (creates a runtime when not
    /// called from inside one).
    pub fn run_blocking(&self) -> Result<ExecutionStatus, ConversationError> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => tokio::task::block_in_place(|| h.block_on(self.run())),
            Err(_) => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| ConversationError::Invalid(format!("no async runtime: {e}")))?
                .block_on(self.run()),
        }
    }

    /// The token callback for one LLM call (see
    /// [`super::listeners::Listeners::token_sink`]).
    pub(crate) fn token_sink(&self) -> Option<TokenCallback> {
        let stream = self.inner.agent.with_agent(|a| a.spec().llm.stream);
        self.inner.listeners.token_sink(stream)
    }
}
