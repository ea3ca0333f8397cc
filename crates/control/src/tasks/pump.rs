//! Forwarding one task's events from its agent server into its output.
//!
//! The forwarder subscribes to `/sockets/events/{session}` with every
//! stored event resent, skips what it already forwarded (by event id;
//! after a takeover, everything up to the last forwarded id), appends each
//! persisted event as a `task_event` line, turns execution-status updates
//! into `task_status` lines, and ends the task when the agent finishes,
//! fails or gets stuck. It reconnects when the socket drops; when the host
//! stays unreachable for the give-up time the task fails.
//!
//! Every write of a forwarder carries the lease epoch it claimed
//! ([`Writer::Lease`]): once another instance took the forwarding over (or
//! this one resumed it after a restart) the store refuses them, and the
//! stale forwarder stops.

use crate::agent_client::{AgentClient, AgentError, Endpoint, SocketRead};
use crate::store::tasks::{self, Line, Task, Writer, status};
use crate::store::{Store, StoreResult};
use crate::tasks::lines;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// WebSocket close code of an unknown conversation.
const CLOSE_NOT_FOUND: u16 = 4004;

/// Whether an event is transient (never persisted): state snapshots,
/// streaming deltas, socket error replies. They are not task output.
pub fn is_transient(event: &Value) -> bool {
    match event.get("kind").and_then(Value::as_str) {
        Some("ConversationStateUpdateEvent") => {
            event.get("key").and_then(Value::as_str) == Some("full_state")
        }
        Some("StreamingDeltaEvent" | "ServerErrorEvent") => true,
        _ => false,
    }
}

/// The new execution status an event announces.
pub fn execution_status(event: &Value) -> Option<&str> {
    if event.get("kind")?.as_str()? != "ConversationStateUpdateEvent" {
        return None;
    }
    if event.get("key")?.as_str()? != "execution_status" {
        return None;
    }
    event.get("value")?.as_str()
}

/// What an execution status means for the task: a new status, or its end
/// with an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The task continues in this status.
    Status(&'static str),
    /// The task ends with this status and exit code.
    End(&'static str, i64),
}

/// Maps the agent server's `execution_status` (`idle` and unknown values
/// change nothing).
pub fn transition(execution_status: &str) -> Option<Transition> {
    Some(match execution_status {
        "running" => Transition::Status(status::RUNNING),
        "paused" => Transition::Status(status::PAUSED),
        "waiting_for_confirmation" => Transition::Status(status::WAITING),
        "finished" => Transition::End(status::FINISHED, 0),
        "error" => Transition::End(status::ERROR, 1),
        "stuck" => Transition::End(status::STUCK, 3),
        _ => return None,
    })
}

/// What a forwarder needs from the control plane that runs it (the
/// service implements it; the forwarder knows nothing else of the service).
pub(crate) trait PumpHost: Send + Sync + 'static {
    /// The shared store.
    fn store(&self) -> &Store;
    /// The agent-server client.
    fn client(&self) -> &AgentClient;
    /// Output retention limit, in bytes, as stored.
    fn retention(&self) -> i64;
    /// How long an unreachable host is tolerated before the task fails.
    fn give_up(&self) -> Duration;
    /// Quiet time on the socket after which the host's liveness is checked.
    fn idle_check(&self) -> Duration;
    /// Wakes the readers of `task_id`'s output.
    fn wake(&self, task_id: &str);
    /// Ends `task` as failed with `reason` (recorded in its output), as
    /// its forwarder of `task.lease_epoch` (refused once taken over).
    fn fail_task(&self, task: &Task, reason: &str) -> impl Future<Output = ()> + Send;
}

enum Flow {
    Continue,
    Ended,
}

struct Pump<H: PumpHost> {
    inner: Arc<H>,
    task: Task,
    seen: HashSet<String>,
    /// After a takeover: skip the resent events up to this id.
    skip_until: Option<String>,
    status: String,
}

impl<H: PumpHost> Pump<H> {
    /// This forwarder's appends are fenced by the lease it claimed.
    fn writer(&self) -> Writer {
        Writer::Lease(self.task.lease_epoch)
    }

    async fn forward(&mut self, event: &Value) -> StoreResult<Flow> {
        if is_transient(event) {
            return Ok(Flow::Continue);
        }
        let id = event
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(until) = &self.skip_until {
            if *until == id {
                self.skip_until = None;
            }
            self.seen.insert(id);
            return Ok(Flow::Continue);
        }
        if !id.is_empty() && !self.seen.insert(id.clone()) {
            return Ok(Flow::Continue);
        }
        // The event, what it says went wrong and the status change it
        // announces are written in one transaction: a forwarder that dies
        // after recording the event must not leave the change unrecorded,
        // since its successor resumes after the last recorded event.
        let mut out = vec![Line::event(lines::task_event(event), &id)];
        if event.get("kind").and_then(Value::as_str)
            == Some(openhands_wire::event::kinds::CONVERSATION_ERROR)
        {
            let detail = event
                .get("detail")
                .and_then(Value::as_str)
                .unwrap_or("the conversation failed");
            let code = event
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("conversation_error");
            out.push(Line::stdout(lines::task_error(&self.task.id, code, detail)));
        }
        let (store, retention, writer) =
            (self.inner.store(), self.inner.retention(), self.writer());
        let flow = match execution_status(event).and_then(transition) {
            Some(Transition::End(s, code)) => {
                out.push(Line::stdout(lines::task_status(
                    &self.task.id,
                    s,
                    Some(code),
                )));
                store
                    .end_task(&self.task.id, s, code, &out, retention, writer)
                    .await?;
                Flow::Ended
            }
            Some(Transition::Status(s)) if s != self.status => {
                out.push(Line::stdout(lines::task_status(&self.task.id, s, None)));
                if store
                    .set_task_status(&self.task.id, s, &out, retention, writer)
                    .await?
                {
                    self.status = s.to_string();
                    Flow::Continue
                } else {
                    Flow::Ended
                }
            }
            _ => {
                if store
                    .append_lines(&self.task.id, &out, retention, writer)
                    .await?
                {
                    Flow::Continue
                } else {
                    Flow::Ended
                }
            }
        };
        self.inner.wake(&self.task.id);
        Ok(flow)
    }

    async fn is_ended(&self) -> bool {
        matches!(self.inner.store().task(&self.task.id).await, Ok(Some(t)) if t.is_ended())
    }

    async fn note(&self, message: &str) {
        let _ = self
            .inner
            .store()
            .append_output(
                &self.task.id,
                tasks::STDERR,
                &lines::diagnostic(message),
                None,
                self.inner.retention(),
                self.writer(),
            )
            .await;
        self.inner.wake(&self.task.id);
    }

    async fn fail(&self, reason: &str) {
        self.inner.fail_task(&self.task, reason).await;
    }
}

/// Forwards the task's events until it ends or `stop` fires.
pub(crate) async fn run<H: PumpHost>(
    inner: Arc<H>,
    task: Task,
    ep: Endpoint,
    stop: CancellationToken,
) {
    let give_up = inner.give_up();
    let idle_check = inner.idle_check();
    let mut pump = Pump {
        skip_until: task.last_event_id.clone(),
        status: task.status.clone(),
        inner,
        task,
        seen: HashSet::new(),
    };
    let mut unreachable_since: Option<Instant> = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        if stop.is_cancelled() || pump.is_ended().await {
            return;
        }
        let client = pump.inner.client().clone();
        let socket = tokio::select! {
            _ = stop.cancelled() => return,
            s = client.subscribe(&ep, &pump.task.session_id) => s,
        };
        let mut socket = match socket {
            Ok(s) => {
                if unreachable_since.take().is_some() {
                    pump.note("the sandbox's agent server answers again").await;
                }
                backoff = Duration::from_millis(100);
                s
            }
            Err(e) => {
                if let AgentError::Status {
                    status: 403 | 404, ..
                } = e
                {
                    pump.fail(&format!("the task's conversation is not available: {e}"))
                        .await;
                    return;
                }
                let since = match unreachable_since {
                    Some(since) => since,
                    None => {
                        pump.note(&format!("cannot reach the sandbox's agent server: {e}"))
                            .await;
                        *unreachable_since.insert(Instant::now())
                    }
                };
                if since.elapsed() >= give_up {
                    pump.fail(&format!(
                        "the sandbox's agent server did not answer for {give_up:?}: {e}"
                    ))
                    .await;
                    return;
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        loop {
            let read = tokio::select! {
                _ = stop.cancelled() => {
                    socket.close().await;
                    return;
                }
                r = socket.next(idle_check) => r,
            };
            match read {
                Ok(SocketRead::Event(ev)) => match pump.forward(&ev).await {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Ended) => {
                        socket.close().await;
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(task = %pump.task.id, "recording an event failed: {e}");
                        // The event was not recorded: resubscribe and retry.
                        if let Some(id) = ev.get("id").and_then(Value::as_str) {
                            pump.seen.remove(id);
                        }
                        break;
                    }
                },
                Ok(SocketRead::Idle) => {
                    if pump.is_ended().await {
                        socket.close().await;
                        return;
                    }
                    if let Err(e) = pump.inner.client().alive(&ep).await {
                        tracing::debug!(task = %pump.task.id, "host silent: {e}");
                        if unreachable_since.is_none() {
                            unreachable_since = Some(Instant::now());
                            pump.note(&format!("the sandbox's agent server does not answer: {e}"))
                                .await;
                        }
                        break;
                    }
                }
                Ok(SocketRead::Closed(Some(CLOSE_NOT_FOUND), _)) => {
                    pump.fail("the task's conversation no longer exists on its agent server")
                        .await;
                    return;
                }
                Ok(SocketRead::Closed(..)) | Err(_) => break,
            }
        }
        socket.close().await;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snapshots_and_deltas_are_not_output() {
        assert!(is_transient(
            &json!({"kind": "ConversationStateUpdateEvent", "key": "full_state"})
        ));
        assert!(is_transient(&json!({"kind": "StreamingDeltaEvent"})));
        assert!(!is_transient(
            &json!({"kind": "ConversationStateUpdateEvent", "key": "execution_status"})
        ));
        assert!(!is_transient(&json!({"kind": "MessageEvent"})));
    }

    #[test]
    fn execution_statuses_map_to_task_transitions() {
        let ev = json!({"kind": "ConversationStateUpdateEvent", "key": "execution_status", "value": "finished"});
        assert_eq!(execution_status(&ev), Some("finished"));
        assert_eq!(
            transition("finished"),
            Some(Transition::End(status::FINISHED, 0))
        );
        assert_eq!(transition("error"), Some(Transition::End(status::ERROR, 1)));
        assert_eq!(transition("stuck"), Some(Transition::End(status::STUCK, 3)));
        assert_eq!(
            transition("paused"),
            Some(Transition::Status(status::PAUSED))
        );
        assert_eq!(transition("idle"), None);
    }
}
