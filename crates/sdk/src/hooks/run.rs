//! Running command hooks: `sh -c <command>` in the workspace through the
//! execution layer (environment policy, own process group, timeout, group
//! killed), the event as JSON on stdin; exit 0 = allow (stdout may be a
//! JSON decision), 2 = block, anything else = a failed hook that blocks
//! nothing. `async` command hooks start in the background (stdin the
//! event, output dropped) and count as allowed at once; each is stopped
//! at its timeout, and all of them when the session ends
//! ([`HookRunner::stop_background`]).

use super::config::{HookConfig, HookDefinition, HookEventType};
use openhands_wire::event::HookExecutionEvent;
use openhands_workspace::exec::{ExecPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest the end of a session waits for stopped background hooks.
const BACKGROUND_STOP_WAIT: Duration = Duration::from_secs(10);

/// The background (`async`) hook processes of one runner.
#[derive(Debug, Default)]
struct Background {
    cancel: parking_lot::Mutex<CancellationToken>,
    tasks: TaskTracker,
}

/// Output kept per stream of one hook.
const MAX_HOOK_OUTPUT: usize = 1 << 20;
/// Characters of stdout/stderr/reason kept in a `HookExecutionEvent`.
const MAX_LOG_CHARS: usize = 50_000;

/// What one hook decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResult {
    /// The hook ran and exited 0.
    pub success: bool,
    /// The hook blocks the operation (exit 2, `decision: deny`,
    /// `continue: false`).
    pub blocked: bool,
    /// Exit code (-1 when it did not exit by itself).
    pub exit_code: i64,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// `allow` / `deny` from its JSON output.
    pub decision: Option<String>,
    /// `reason` from its JSON output.
    pub reason: Option<String>,
    /// `additionalContext` from its JSON output.
    pub additional_context: Option<String>,
    /// Why it failed to run.
    pub error: Option<String>,
}

/// The payload of one hook event (what the command reads on stdin).
#[derive(Debug, Clone, Default)]
pub struct HookInput {
    /// Tool concerned.
    pub tool_name: Option<String>,
    /// The action's arguments.
    pub tool_input: Option<Value>,
    /// The observation.
    pub tool_response: Option<Value>,
    /// The user's message.
    pub message: Option<String>,
    /// Extra data (`reason` of a stop).
    pub metadata: Map<String, Value>,
}

/// Runs the hooks of one conversation.
#[derive(Debug, Clone)]
pub struct HookRunner {
    config: HookConfig,
    working_dir: PathBuf,
    pub(super) session_id: String,
    exec: ExecPolicy,
    /// The model prompt hooks ask (the agent's).
    pub(super) llm: Option<openhands_llm::Llm>,
    /// What runs agent hooks' sub-conversations.
    pub(super) agent_host: Option<super::host::AgentHost>,
    background: Arc<Background>,
}

/// One hook that ran, with its result.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// The hook.
    pub hook: HookDefinition,
    /// Its result.
    pub result: HookResult,
}

impl HookRunner {
    /// Hooks of `config` for the conversation `session_id` in `working_dir`.
    pub fn new(
        config: HookConfig,
        working_dir: PathBuf,
        session_id: String,
        exec: ExecPolicy,
    ) -> Self {
        Self {
            config,
            working_dir,
            session_id,
            exec,
            llm: None,
            agent_host: None,
            background: Arc::default(),
        }
    }

    /// The same runner running agent hooks through `host`.
    pub fn with_agent_host(mut self, host: Arc<dyn super::host::AgentHookHost>) -> Self {
        self.agent_host = Some(super::host::AgentHost(host));
        self
    }

    /// How many background hooks are still running.
    pub fn background_running(&self) -> usize {
        self.background.tasks.len()
    }

    /// Stops every background hook (their process groups are killed and
    /// reaped) and waits for them, within a bound.
    pub async fn stop_background(&self) {
        let token = std::mem::take(&mut *self.background.cancel.lock());
        token.cancel();
        self.background.tasks.close();
        if tokio::time::timeout(BACKGROUND_STOP_WAIT, self.background.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background hooks did not stop in time");
        }
        self.background.tasks.reopen();
    }

    /// The same runner asking `llm` for prompt hooks.
    pub fn with_llm(mut self, llm: openhands_llm::Llm) -> Self {
        self.llm = Some(llm);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HookConfig {
        &self.config
    }

    /// Whether any hook is configured for `t`.
    pub fn has(&self, t: HookEventType) -> bool {
        !self.config.matchers(t).is_empty()
    }

    /// Runs the hooks of `t` matching the input's tool, in order; with
    /// `stop_on_block` the first blocking hook ends the series.
    pub async fn run(
        &self,
        t: HookEventType,
        input: &HookInput,
        stop_on_block: bool,
    ) -> Vec<HookRun> {
        let hooks = self.config.hooks_for(t, input.tool_name.as_deref());
        let mut out = Vec::new();
        if hooks.is_empty() {
            return out;
        }
        let payload = json!({
            "event_type": t.as_str(),
            "tool_name": input.tool_name,
            "tool_input": input.tool_input,
            "tool_response": input.tool_response,
            "message": input.message,
            "session_id": self.session_id,
            "working_dir": self.working_dir.to_string_lossy(),
            "metadata": input.metadata,
        })
        .to_string();
        for hook in hooks {
            let result = match hook.r#type.as_str() {
                "prompt" => self.run_prompt(t, hook, &payload).await,
                "agent" => self.run_agent(t, hook, &payload).await,
                _ => self.run_one(t, hook, input, &payload).await,
            };
            let blocked = result.blocked;
            out.push(HookRun {
                hook: hook.clone(),
                result,
            });
            if stop_on_block && blocked {
                break;
            }
        }
        out
    }

    async fn run_one(
        &self,
        t: HookEventType,
        hook: &HookDefinition,
        input: &HookInput,
        payload: &str,
    ) -> HookResult {
        let mut extra = vec![
            (
                "OPENHANDS_PROJECT_DIR".to_string(),
                self.working_dir.to_string_lossy().into_owned(),
            ),
            ("OPENHANDS_SESSION_ID".to_string(), self.session_id.clone()),
            ("OPENHANDS_EVENT_TYPE".to_string(), t.as_str().to_string()),
        ];
        if let Some(tool) = &input.tool_name {
            extra.push(("OPENHANDS_TOOL_NAME".to_string(), tool.clone()));
        }
        let env = match self.exec.env.child_env_with(extra) {
            Ok(e) => e,
            Err(e) => {
                return failed(format!("Hook execution failed: {e}"));
            }
        };
        let spec = ProcessSpec::new("sh", env)
            .arg("-c")
            .arg(&hook.command)
            .cwd(&self.working_dir)
            .sandbox(self.exec.sandbox.as_ref())
            .input(payload.as_bytes().to_vec());
        let limits = RunLimits {
            timeout: Duration::from_secs(hook.timeout.max(1)),
            linger_after_exit: Some(Duration::from_millis(500)),
            ..RunLimits::default()
        };
        if hook.is_async {
            return self.start_background(spec, limits, &hook.command);
        }
        let out =
            match run_to_completion(&spec, &limits, &CancellationToken::new(), MAX_HOOK_OUTPUT)
                .await
            {
                Ok(o) => o,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return failed(format!("Hook command not found: {e}"));
                }
                Err(e) => return failed(format!("Hook execution failed: {e}")),
            };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = match out.end {
            RunEnd::Exited(c) => c,
            RunEnd::TimedOut | RunEnd::Cancelled(_) => {
                let mut r = failed(format!("Hook timed out after {} seconds", hook.timeout));
                r.stdout = stdout;
                r.stderr = stderr;
                return r;
            }
        };
        let mut r = HookResult {
            success: code == 0,
            blocked: code == 2,
            exit_code: code,
            stdout,
            stderr,
            ..HookResult::default()
        };
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(r.stdout.trim()) {
            match o
                .get("decision")
                .and_then(Value::as_str)
                .map(str::to_lowercase)
                .as_deref()
            {
                Some("allow") => r.decision = Some("allow".into()),
                Some("deny") => {
                    r.decision = Some("deny".into());
                    r.blocked = true;
                }
                _ => {}
            }
            let text = |v: &Value| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            };
            r.reason = o.get("reason").map(text);
            r.additional_context = o.get("additionalContext").map(text);
            if o.get("continue").is_some_and(|c| !truthy(c)) {
                r.blocked = true;
            }
        }
        r
    }
}

impl HookRunner {
    /// Starts an `async` hook: allowed at once, stopped at its timeout or
    /// with the session.
    fn start_background(&self, spec: ProcessSpec, limits: RunLimits, command: &str) -> HookResult {
        if tokio::runtime::Handle::try_current().is_err() {
            return failed("Failed to start async hook: no runtime".into());
        }
        let cancel = self.background.cancel.lock().clone();
        let shown = command.to_string();
        self.background.tasks.spawn(async move {
            match run_to_completion(&spec, &limits, &cancel, 0).await {
                Ok(out) => tracing::debug!(command = %shown, end = ?out.end, "async hook ended"),
                Err(e) => tracing::warn!(command = %shown, error = %e, "async hook did not start"),
            }
        });
        HookResult {
            success: true,
            exit_code: 0,
            ..HookResult::default()
        }
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn failed(error: String) -> HookResult {
    HookResult {
        success: false,
        exit_code: -1,
        error: Some(error),
        ..HookResult::default()
    }
}

/// Why the hooks blocked: the first blocking hook's reason, else its
/// stderr, else a generic text.
pub fn blocking_reason(runs: &[HookRun]) -> Option<String> {
    runs.iter().find(|r| r.result.blocked).map(|r| {
        r.result
            .reason
            .clone()
            .filter(|s| !s.is_empty())
            .or_else(|| Some(r.result.stderr.trim().to_string()).filter(|s| !s.is_empty()))
            .unwrap_or_else(|| "Blocked by hook".to_string())
    })
}

fn cut(s: &str) -> String {
    const SUFFIX: &str = "\n<TRUNCATED>";
    if s.chars().count() <= MAX_LOG_CHARS {
        return s.to_string();
    }
    let keep: String = s.chars().take(MAX_LOG_CHARS - SUFFIX.len()).collect();
    keep + SUFFIX
}

/// The `HookExecutionEvent` recording one run.
pub fn execution_event(
    t: HookEventType,
    run: &HookRun,
    tool_name: Option<&str>,
    action_id: Option<&str>,
    message_id: Option<&str>,
    hook_input: Option<Map<String, Value>>,
) -> HookExecutionEvent {
    let r = &run.result;
    HookExecutionEvent {
        hook_event_type: t.as_str().to_string(),
        hook_command: run.hook.display_command(),
        tool_name: tool_name.map(String::from),
        success: r.success,
        blocked: r.blocked,
        exit_code: r.exit_code,
        stdout: cut(&r.stdout),
        stderr: cut(&r.stderr),
        reason: r.reason.as_deref().map(cut),
        additional_context: r.additional_context.as_deref().map(cut),
        error: r.error.as_deref().map(cut),
        action_id: action_id.map(String::from),
        message_id: message_id.map(String::from),
        hook_input,
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
