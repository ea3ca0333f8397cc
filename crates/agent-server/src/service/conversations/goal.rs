//! Goal loops on the server (`POST …/goal`, `/goal/stop`, `/goal/resume`):
//! a background task drives a live conversation with the SDK's
//! [`GoalController`] — objective, run, audit by the judge (the agent's
//! LLM), follow-up — and records each step as a goal status event, so
//! clients render progress and a stopped goal can be resumed, also after a
//! restart.

use super::error::{ServiceError, blocking};
use super::live::{GoalLoop, Live, RunPermit, Trigger};
use openhands_sdk::goal::{
    GoalController, GoalStatus, GoalStatusName, GoalStep, GoalVerdict, RESUME_PROMPT, judge_goal,
};
use openhands_wire::message::Message;
use openhands_wire::state::ExecutionStatus;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

/// Detail of the 409 when a run or another goal is in progress.
pub const GOAL_BUSY: &str = "Conversation run or goal loop already running.";

/// Detail of the 400 when there is nothing to resume.
pub const NO_RESUMABLE_GOAL: &str = "no_resumable_goal";

/// How a loop stopped before its outcome.
enum Halt {
    /// A pause or an error status ended a run.
    RunStopped(ExecutionStatus),
    /// Something failed (judge, disk).
    Failed(String),
}

impl Live {
    /// Starts a goal loop for `objective` with at most `max_iterations`
    /// audits. Refused while a run or another goal is in progress (409),
    /// when every run slot is taken (429) or for an empty objective (400).
    pub async fn start_goal(
        self: &Arc<Self>,
        objective: &str,
        max_iterations: u32,
    ) -> Result<(), ServiceError> {
        let controller = GoalController::new(objective, max_iterations)
            .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        self.schedule_goal(controller, false).await
    }

    /// Resumes the last goal that neither completed nor was capped, from
    /// the audit it had reached, with a resume prompt.
    pub async fn resume_goal(self: &Arc<Self>) -> Result<(), ServiceError> {
        let last = GoalStatus::latest(&self.conv)
            .filter(|s| !s.status.is_terminal())
            .ok_or_else(|| ServiceError::BadRequest(NO_RESUMABLE_GOAL.into()))?;
        let controller =
            GoalController::resumed(&last.objective, last.max_iterations, last.iteration)
                .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        self.schedule_goal(controller, true).await
    }

    /// Stops the goal loop, if one runs, recording it as interrupted; the
    /// run in progress, if any, finishes its course. True when one ran.
    pub async fn stop_goal(&self) -> bool {
        let Some(goal) = self.goal.lock().await.take() else {
            return false;
        };
        goal.stop.cancel();
        let _ = goal.task.await;
        true
    }

    /// Ends the goal loop without recording anything (the conversation is
    /// closing; a reload records the goal as interrupted).
    pub(super) async fn end_goal_quietly(&self) {
        let Some(goal) = self.goal.lock().await.take() else {
            return;
        };
        goal.task.abort();
        let _ = goal.task.await;
    }

    async fn schedule_goal(
        self: &Arc<Self>,
        controller: GoalController,
        resume: bool,
    ) -> Result<(), ServiceError> {
        let mut slot = self.goal.lock().await;
        if slot.as_ref().is_some_and(|g| !g.task.is_finished()) {
            return Err(ServiceError::Conflict(GOAL_BUSY.into()));
        }
        if self.is_running() || self.conv.status() == ExecutionStatus::Running {
            return Err(ServiceError::Conflict(GOAL_BUSY.into()));
        }
        // One slot for the loop's whole life: its runs never compete for
        // one between rounds.
        let permit = self.take_run_slot()?;
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let this = self.clone();
            let stop = stop.clone();
            async move { this.drive_goal(controller, resume, stop, permit).await }
        });
        *slot = Some(GoalLoop { stop, task });
        Ok(())
    }

    async fn drive_goal(
        self: Arc<Self>,
        mut controller: GoalController,
        resume: bool,
        stop: CancellationToken,
        _permit: OwnedSemaphorePermit,
    ) {
        let ended = tokio::select! {
            ended = self.goal_rounds(&mut controller, resume) => Some(ended),
            () = stop.cancelled() => None,
        };
        match ended {
            Some(Ok((status, verdict))) => {
                tracing::info!(conversation = %self.id(), iterations = controller.iteration(), ?status, "goal ended");
                self.record_goal(&controller, false, status, Some(verdict))
                    .await;
                return;
            }
            Some(Err(Halt::RunStopped(status))) => {
                tracing::info!(conversation = %self.id(), status = status.as_str(), "goal halted by its run");
            }
            Some(Err(Halt::Failed(e))) => {
                tracing::warn!(conversation = %self.id(), error = %e, "goal loop failed");
            }
            None => tracing::info!(conversation = %self.id(), "goal stopped"),
        }
        self.record_goal(&controller, false, GoalStatusName::Interrupted, None)
            .await;
    }

    /// The loop itself: the first message, then run → audit → follow-up
    /// until an outcome.
    async fn goal_rounds(
        self: &Arc<Self>,
        controller: &mut GoalController,
        resume: bool,
    ) -> Result<(GoalStatusName, GoalVerdict), Halt> {
        self.try_record_goal(controller, true, GoalStatusName::Running, None)
            .await
            .map_err(|e| Halt::Failed(e.to_string()))?;
        let first = if resume {
            RESUME_PROMPT.to_string()
        } else {
            controller.start()
        };
        self.send_goal_message(first).await?;
        loop {
            match self.start_run_inner(RunPermit::Covered, Trigger::Run) {
                Ok(()) | Err(ServiceError::AlreadyRunning) => {}
                Err(e) => return Err(Halt::Failed(e.to_string())),
            }
            self.wait_idle_for(None).await;
            let status = self.conv.status();
            if matches!(status, ExecutionStatus::Paused | ExecutionStatus::Error) {
                return Err(Halt::RunStopped(status));
            }
            // A stuck run is not a reason to give up: the judge decides, and
            // its follow-up breaks a genuine loop.
            let transcript = self.conv.transcript();
            let judge = self.conv.agent().llm().clone();
            let verdict = judge_goal(&judge, controller.objective(), &transcript)
                .await
                .map_err(|e| Halt::Failed(format!("the goal judge failed: {e}")))?;
            match controller.on_verdict(verdict) {
                GoalStep::Done(outcome) => return Ok((outcome.status, outcome.verdict)),
                GoalStep::Continue { followup, verdict } => {
                    self.try_record_goal(controller, true, GoalStatusName::Running, Some(verdict))
                        .await
                        .map_err(|e| Halt::Failed(e.to_string()))?;
                    self.send_goal_message(followup).await?;
                }
            }
        }
    }

    async fn send_goal_message(&self, text: String) -> Result<(), Halt> {
        let conv = self.conv.clone();
        blocking(move || {
            conv.send(Message::user(text))
                .map(|_| ())
                .map_err(ServiceError::from)
        })
        .await
        .map_err(|e| Halt::Failed(e.to_string()))
    }

    async fn try_record_goal(
        &self,
        controller: &GoalController,
        active: bool,
        status: GoalStatusName,
        verdict: Option<GoalVerdict>,
    ) -> Result<(), ServiceError> {
        let record = GoalStatus {
            active,
            status,
            iteration: controller.iteration(),
            max_iterations: controller.max_iterations(),
            objective: controller.objective().to_string(),
            verdict,
        };
        let conv = self.conv.clone();
        blocking(move || record.record(&conv).map_err(ServiceError::from)).await
    }

    /// Records a status at the end of a loop; a failure is logged (the
    /// loop is over either way).
    async fn record_goal(
        &self,
        controller: &GoalController,
        active: bool,
        status: GoalStatusName,
        verdict: Option<GoalVerdict>,
    ) {
        if let Err(e) = self
            .try_record_goal(controller, active, status, verdict)
            .await
        {
            tracing::warn!(conversation = %self.id(), error = %e, "recording the goal status failed");
        }
    }
}
