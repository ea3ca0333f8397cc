//! One workflow run: the harness child, its requests served by sub-agents
//! of the conversation, the result. The child is stopped (its whole group)
//! when the run ends, is cancelled or times out; sub-agents still running
//! then are interrupted.

use super::protocol::{Answer, Job, Request};
use openhands_sdk::subagent::{SubAgentHost, SubAgentOutcome, SubAgentScope};
use openhands_workspace::exec::{ExecPolicy, GroupChild, ProcessSpec};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Lines of the harness's standard error kept for an error message.
const STDERR_TAIL: usize = 20;
/// How long stopped sub-agents get to wind down.
const WIND_DOWN: Duration = Duration::from_secs(10);

/// Why a workflow produced no result.
#[derive(Debug, thiserror::Error)]
pub(super) enum WorkflowError {
    /// The script failed (rule broken, exception, a sub-agent failure it
    /// did not catch); the harness's text.
    #[error("{0}")]
    Script(String),
    /// The interpreter could not be started.
    #[error("cannot start the workflow interpreter '{0}': {1}")]
    Start(String, std::io::Error),
    /// Talking to the interpreter failed.
    #[error("lost contact with the workflow interpreter: {0}")]
    Io(std::io::Error),
    /// It ran longer than allowed.
    #[error("Workflow timed out after {0} seconds")]
    Timeout(u64),
    /// The run was interrupted.
    #[error("the workflow was interrupted")]
    Cancelled,
    /// The interpreter ended without a result.
    #[error("the workflow interpreter exited without a result{0}")]
    Died(String),
}

/// Where a run's sub-agents come from: the conversation's delegation and
/// the tool's `sub_agent_scope`.
#[derive(Clone)]
pub(super) struct SubAgents {
    pub host: Arc<dyn SubAgentHost>,
    pub scope: SubAgentScope,
}

/// What one run needs.
pub(super) struct Run<'a> {
    pub python: &'a str,
    pub harness: &'a str,
    pub exec: &'a ExecPolicy,
    pub working_dir: &'a Path,
    pub delegation: SubAgents,
    /// Numbers the sub-agent tasks of this tool (their cost is recorded
    /// under `task:workflow_<n>`).
    pub tasks: Arc<AtomicU64>,
    pub timeout: Duration,
}

impl Run<'_> {
    /// Runs `job`'s script (of the workflow `name`) to its end; its
    /// result text.
    pub(super) async fn execute(
        self,
        name: &str,
        job: Job<'_>,
        cancel: &CancellationToken,
    ) -> Result<String, WorkflowError> {
        let spec = ProcessSpec::new(self.python, self.exec.env.child_env())
            .args(["-I", "-c", self.harness])
            .cwd(self.working_dir)
            .piped_stdin()
            .sandbox(self.exec.sandbox.as_ref());
        let mut child = GroupChild::spawn(&spec)
            .map_err(|e| WorkflowError::Start(self.python.to_string(), e))?;
        let agents = cancel.child_token();
        let mut running = JoinSet::new();
        let outcome = self
            .serve(&mut child, name, job, cancel, &agents, &mut running)
            .await;
        agents.cancel();
        let _ = child.terminate(Duration::from_secs(2)).await;
        let wound_down = tokio::time::timeout(WIND_DOWN, async {
            while running.join_next().await.is_some() {}
        })
        .await;
        if wound_down.is_err() {
            running.abort_all();
        }
        outcome
    }

    async fn serve(
        &self,
        child: &mut GroupChild,
        name: &str,
        job: Job<'_>,
        cancel: &CancellationToken,
        agents: &CancellationToken,
        running: &mut JoinSet<()>,
    ) -> Result<String, WorkflowError> {
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.take_stdin(), child.take_stdout(), child.take_stderr())
        else {
            return Err(WorkflowError::Died(": no pipes to the interpreter".into()));
        };
        let tail = Arc::new(parking_lot::Mutex::new(VecDeque::new()));
        running.spawn(log_stderr(stderr, tail.clone()));
        write_line(&mut stdin, &job).await?;
        let (answers, mut answered) = mpsc::unbounded_channel::<Answer>();
        let mut lines = BufReader::new(stdout).lines();
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                line = lines.next_line() => {
                    let Some(line) = line.map_err(WorkflowError::Io)? else {
                        let tail: Vec<String> = tail.lock().iter().cloned().collect();
                        let detail = if tail.is_empty() {
                            String::new()
                        } else {
                            format!(":\n{}", tail.join("\n"))
                        };
                        return Err(WorkflowError::Died(detail));
                    };
                    if line.trim().is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<Request>(&line) {
                        Ok(Request::Done { ok: true, text }) => return Ok(text),
                        Ok(Request::Done { ok: false, text }) => {
                            return Err(WorkflowError::Script(text));
                        }
                        Ok(Request::RunAgent { id, prompt, subagent_type, description }) => {
                            let n = self.tasks.fetch_add(1, Ordering::Relaxed) + 1;
                            tracing::debug!(
                                workflow = %name, task = n,
                                description = description.as_deref().unwrap_or(""),
                                "workflow sub-agent task"
                            );
                            running.spawn(run_agent(
                                self.delegation.clone(),
                                n,
                                id,
                                prompt,
                                subagent_type,
                                agents.clone(),
                                answers.clone(),
                            ));
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, line = %line, "unreadable workflow request");
                        }
                    }
                }
                Some(answer) = answered.recv() => write_line(&mut stdin, &answer).await?,
                _ = cancel.cancelled() => return Err(WorkflowError::Cancelled),
                _ = &mut deadline => return Err(WorkflowError::Timeout(self.timeout.as_secs())),
            }
        }
    }
}

async fn write_line<T: serde::Serialize>(
    stdin: &mut tokio::process::ChildStdin,
    value: &T,
) -> Result<(), WorkflowError> {
    let mut line = serde_json::to_vec(value)
        .map_err(|e| WorkflowError::Io(std::io::Error::other(e.to_string())))?;
    line.push(b'\n');
    stdin.write_all(&line).await.map_err(WorkflowError::Io)?;
    stdin.flush().await.map_err(WorkflowError::Io)
}

/// One sub-agent task; its answer goes back to the harness.
async fn run_agent(
    delegation: SubAgents,
    number: u64,
    id: u64,
    prompt: String,
    subagent_type: String,
    cancel: CancellationToken,
    answers: mpsc::UnboundedSender<Answer>,
) {
    let SubAgents {
        host: delegation,
        scope,
    } = delegation;
    let answer = match delegation.spawn(Some(&subagent_type), None, scope).await {
        Err(e) => Answer {
            id,
            ok: false,
            result: None,
            error: Some(e.to_string()),
        },
        Ok(sub) => {
            let label = format!("workflow_{number:08x}");
            let outcome = sub.run_task(&prompt, &label, None, &cancel).await;
            delegation.record_metrics(&format!("task:workflow_{number:08x}"), sub.as_ref());
            sub.close().await;
            match outcome {
                SubAgentOutcome::Completed(text) => Answer {
                    id,
                    ok: true,
                    result: Some(text),
                    error: None,
                },
                SubAgentOutcome::Failed(reason) => Answer {
                    id,
                    ok: false,
                    result: None,
                    error: Some(reason),
                },
            }
        }
    };
    // The run may have ended meanwhile; nobody needs the answer then.
    let _ = answers.send(answer);
}

/// Logs what scripts print (and the harness's own errors), keeping the
/// last lines.
async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<parking_lot::Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "openhands::workflow", "{line}");
        let mut t = tail.lock();
        if t.len() == STDERR_TAIL {
            t.pop_front();
        }
        t.push_back(line);
    }
}
