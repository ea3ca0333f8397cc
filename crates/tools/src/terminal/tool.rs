//! [`TerminalTool`]: the `terminal` tool the model calls.

use super::executor::{Config, Executor, fmt_secs};
use super::options::TerminalOptions;
use super::output::CaptureLimits;
use super::session::{Session, SessionSpec};
use super::shell_env::ShellEnvSpec;
use super::types::{
    ACTION_KIND, CmdOutputMetadata, OBSERVATION_KIND, TOOL_KIND, TerminalAction,
    TerminalObservation,
};
use openhands_sdk::tool::{
    SecretAccess, StoredObservation, ToolCallContext, ToolEnv, ToolError, TypedTool,
};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Name the model calls.
pub const TOOL_NAME: &str = "terminal";

/// Header of the text the model sees for an error observation.
const ERROR_HEADER: &str = "[The terminal could not carry out this request.]\n";

/// The `terminal` tool: a persistent bash session on a pseudo-terminal,
/// one per tool instance (that is, per conversation).
///
/// The shell starts on the first command (or on [`TerminalTool::start`]) in
/// [`ToolEnv::working_dir`]. Calls are serialized; [`TypedTool::close`] (and
/// dropping the tool) stops the shell and every process it started.
pub struct TerminalTool {
    exec: tokio::sync::Mutex<Executor>,
    slot: Arc<Mutex<Option<Arc<Session>>>>,
    closed: AtomicBool,
    secrets: Arc<dyn SecretAccess>,
    no_change_timeout: Duration,
    /// A temporary spill directory this tool created (removed on close).
    owned_spill_dir: Option<PathBuf>,
}

impl std::fmt::Debug for TerminalTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalTool").finish_non_exhaustive()
    }
}

impl TerminalTool {
    /// A terminal for `env` with default options.
    pub fn new(env: &ToolEnv) -> Self {
        Self::with_options(env, TerminalOptions::default())
    }

    /// A terminal for `env` with `options`.
    ///
    /// Truncated outputs are saved under
    /// `<conversation_dir>/observations/`, or in a temporary directory
    /// (removed on close) when the conversation has no directory.
    pub fn with_options(env: &ToolEnv, options: TerminalOptions) -> Self {
        let (spill_dir, owned_spill_dir) = match &env.conversation_dir {
            Some(d) => (d.join("observations"), None),
            None => {
                let id = uuid::Uuid::new_v4().simple().to_string();
                let d = std::env::temp_dir().join(format!("openhands-terminal-output-{id}"));
                (d.clone(), Some(d))
            }
        };
        let max_chars = options.max_output_chars.max(1000);
        let limits = CaptureLimits {
            head_bytes: max_chars * 2,
            tail_bytes: max_chars * 2,
            spill_after: max_chars,
            spill_dir: Some(spill_dir),
            max_spill_bytes: options.max_saved_output_bytes,
        };
        let spec = SessionSpec {
            shell: ShellEnvSpec::new(&env.exec, &options),
            working_dir: env.working_dir.clone(),
            cols: options.columns,
            rows: options.rows,
            limits,
            secrets: env.secrets.clone(),
        };
        let cfg = Config {
            spec,
            no_change_timeout: options.no_change_timeout,
            hard_timeout: options.hard_timeout,
            max_timeout: options.max_timeout,
            max_output_chars: max_chars,
            start_timeout: options.start_timeout,
        };
        let slot = Arc::new(Mutex::new(None));
        Self {
            exec: tokio::sync::Mutex::new(Executor::new(cfg, slot.clone())),
            slot,
            closed: AtomicBool::new(false),
            secrets: env.secrets.clone(),
            no_change_timeout: options.no_change_timeout,
            owned_spill_dir,
        }
    }

    /// A terminal configured from a tool spec's `params`, as the reference
    /// accepts them: `no_change_timeout_seconds` (number), `shell_path`
    /// (string), `env` (object of strings). `username` is accepted only as
    /// null or the user the server runs as (the shell is never started as
    /// another user), `terminal_type` only as null or `subprocess` (what
    /// this terminal is: one interactive shell on a pseudo-terminal); any
    /// other value, and any other key, is an error naming it.
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        let mut options = TerminalOptions::default();
        for (key, value) in params {
            match key.as_str() {
                "no_change_timeout_seconds" => {
                    if value.is_null() {
                        continue;
                    }
                    let secs = value
                        .as_f64()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| {
                            ToolError::InvalidArguments(format!(
                                "terminal: no_change_timeout_seconds must be a positive number, got {value}"
                            ))
                        })?;
                    options.no_change_timeout = Duration::from_secs_f64(secs);
                }
                "shell_path" => {
                    if let Some(s) = value.as_str() {
                        options.shell = PathBuf::from(s);
                    } else if !value.is_null() {
                        return Err(ToolError::InvalidArguments(format!(
                            "terminal: shell_path must be a string, got {value}"
                        )));
                    }
                }
                "env" => {
                    let Some(map) = value.as_object() else {
                        if value.is_null() {
                            continue;
                        }
                        return Err(ToolError::InvalidArguments(format!(
                            "terminal: env must be an object of strings, got {value}"
                        )));
                    };
                    for (k, v) in map {
                        if !openhands_workspace::exec::env::is_valid_name(k) {
                            return Err(ToolError::InvalidArguments(format!(
                                "terminal: invalid environment variable name {k:?} in env (names consist of ASCII letters, digits and `_` and do not start with a digit)"
                            )));
                        }
                        let Some(v) = v.as_str() else {
                            return Err(ToolError::InvalidArguments(format!(
                                "terminal: env value of {k} must be a string"
                            )));
                        };
                        options.env.push((k.clone(), v.to_string()));
                    }
                }
                "username" => check_username(value)?,
                "terminal_type" => match value.as_str() {
                    None if value.is_null() => {}
                    Some("subprocess") => {}
                    _ => {
                        return Err(ToolError::InvalidArguments(format!(
                            "terminal: terminal_type {value} is not available here; this terminal is one interactive shell on a pseudo-terminal (\"subprocess\"): leave terminal_type out or set it to \"subprocess\""
                        )));
                    }
                },
                other => {
                    return Err(ToolError::InvalidArguments(format!(
                        "terminal: unknown parameter {other:?} (known: no_change_timeout_seconds, shell_path, env, username, terminal_type)"
                    )));
                }
            }
        }
        Ok(Self::with_options(env, options))
    }

    /// Starts the shell now instead of on the first command.
    pub async fn start(&self) -> Result<(), ToolError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(ToolError::Execution("the terminal is closed".into()));
        }
        self.exec
            .lock()
            .await
            .start()
            .await
            .map_err(|e| ToolError::Execution(e.to_string()))
    }

    /// Runs one action and returns the typed observation (secrets masked).
    pub async fn run(&self, action: &TerminalAction, ctx: &ToolCallContext) -> TerminalObservation {
        let obs = if self.closed.load(Ordering::SeqCst) {
            TerminalObservation {
                content: vec![Content::text("The terminal has been closed.")],
                is_error: true,
                command: Some(action.command.clone()),
                exit_code: None,
                timeout: false,
                metadata: CmdOutputMetadata::default(),
                full_output_save_dir: None,
            }
        } else {
            let exec = tokio::select! {
                guard = self.exec.lock() => Some(guard),
                _ = ctx.cancel.cancelled() => None,
            };
            match exec {
                Some(mut exec) => exec.execute(action, &ctx.cancel).await,
                None => TerminalObservation {
                    content: vec![Content::text(
                        "The run was cancelled before this command could start (another terminal call was still running).",
                    )],
                    is_error: true,
                    command: Some(action.command.clone()),
                    exit_code: None,
                    timeout: false,
                    metadata: CmdOutputMetadata::default(),
                    full_output_save_dir: None,
                },
            }
        };
        mask_observation(obs, self.secrets.as_ref())
    }

    /// Process id of the current shell, if one is running.
    pub fn shell_pid(&self) -> Option<i32> {
        self.slot.lock().as_ref().map(|s| s.pid())
    }
}

impl Drop for TerminalTool {
    fn drop(&mut self) {
        if let Some(d) = &self.owned_spill_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl TypedTool for TerminalTool {
    type Action = TerminalAction;
    type Observation = TerminalObservation;
    const NAME: &'static str = TOOL_NAME;
    const KIND: &'static str = TOOL_KIND;
    const ACTION_KIND: &'static str = ACTION_KIND;
    const OBSERVATION_KIND: &'static str = OBSERVATION_KIND;

    fn description(&self) -> String {
        description(self.no_change_timeout)
    }

    fn parameters_schema(&self) -> Value {
        parameters_schema(self.no_change_timeout)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(TOOL_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    async fn run(
        &self,
        action: TerminalAction,
        ctx: &ToolCallContext,
    ) -> Result<TerminalObservation, ToolError> {
        // The inherent `TerminalTool::run`, which never fails.
        Ok(TerminalTool::run(self, &action, ctx).await)
    }

    fn observation_to_llm(
        &self,
        observation: StoredObservation<'_, TerminalObservation>,
    ) -> Vec<Content> {
        match observation.parse() {
            Some(obs) => llm_content(&obs),
            None => observation.content(),
        }
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Stop the shell first so a call waiting on it returns at once.
        let session = self.slot.lock().take();
        if let Some(s) = session {
            let _ =
                tokio::task::spawn_blocking(move || s.terminate(Duration::from_millis(300))).await;
        }
        self.exec.lock().await.shutdown().await;
        if let Some(d) = self.owned_spill_dir.clone() {
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(d)).await;
        }
    }
}

/// The text the model sees for an observation: an error header when it
/// is an error, then prefix, output and suffix, then the working
/// directory, the Python interpreter and the exit code as bracketed lines.
pub fn llm_content(obs: &TerminalObservation) -> Vec<Content> {
    let mut parts = Vec::new();
    if obs.is_error {
        parts.push(Content::text(ERROR_HEADER));
    }
    let m = &obs.metadata;
    let mut text = format!("{}{}{}", m.prefix, obs.text(), m.suffix);
    if let Some(d) = m.working_dir.as_deref().filter(|d| !d.is_empty()) {
        text.push_str(&format!("\n[Current working directory: {d}]"));
    }
    if let Some(p) = m.py_interpreter_path.as_deref().filter(|p| !p.is_empty()) {
        text.push_str(&format!("\n[Python interpreter: {p}]"));
    }
    if m.exit_code != -1 {
        text.push_str(&format!(
            "\n[Command finished with exit code {}]",
            m.exit_code
        ));
    }
    parts.push(Content::text(text));
    parts
}

/// Masks secret values in every text field of an observation.
fn mask_observation(
    mut obs: TerminalObservation,
    secrets: &dyn SecretAccess,
) -> TerminalObservation {
    for part in &mut obs.content {
        if let Content::Text(t) = part {
            t.text = secrets.mask(&t.text);
        }
    }
    let mask_opt = |s: &mut Option<String>| {
        if let Some(v) = s {
            *v = secrets.mask(v);
        }
    };
    mask_opt(&mut obs.command);
    mask_opt(&mut obs.full_output_save_dir);
    let m = &mut obs.metadata;
    mask_opt(&mut m.username);
    mask_opt(&mut m.hostname);
    mask_opt(&mut m.working_dir);
    mask_opt(&mut m.py_interpreter_path);
    m.prefix = secrets.mask(&m.prefix);
    m.suffix = secrets.mask(&m.suffix);
    obs
}

/// The JSON schema of the arguments (without `summary`/`security_risk`).
pub fn parameters_schema(no_change_timeout: Duration) -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The bash command to run, e.g. `ls -la` or `cd src && make test`. It may span several lines or chain commands with `&&`, `;` or `|`. When `is_input` is true: the text to type into the running program (Enter is pressed after it), or one key name: `C-c` (Ctrl+C), `C-d` (Ctrl+D, end of input), `C-z` (Ctrl+Z), any other `C-<letter>`, `UP`, `DOWN`, `LEFT`, `RIGHT`, `HOME`, `END`, `PGUP`, `PGDN`, `TAB`, `ESC`, `BS` (backspace), `ENTER`. An empty string while a previous command is still running (exit code -1) waits for and shows its new output."
            },
            "is_input": {
                "type": "boolean",
                "description": "Set to true to send `command` to the program that is currently running (answer a prompt, type into a REPL, or send a key such as `C-c`) instead of running it as a new shell command. Only valid while a command is running. Defaults to false."
            },
            "timeout": {
                "type": "number",
                "description": format!("Optional. Seconds to wait for the command before returning. If it is still running then, you get the output so far and it keeps running in the background of this session (you can wait for more, send input, or stop it with `C-c`). Without a timeout, the call returns when the command finishes or once it has printed nothing new for {}. Use a larger value for long builds, installs or test runs, or for commands with a known duration such as `sleep`.", fmt_secs(no_change_timeout))
            },
            "reset": {
                "type": "boolean",
                "description": "Set to true to kill the terminal session, including every process started in it and any background jobs, and start a fresh shell in the workspace directory. Environment variables, functions and the current directory are lost. Use only when the terminal is stuck. Cannot be combined with `is_input`. Defaults to false."
            }
        },
        "required": ["command"]
    })
}

/// The tool description shown to the model.
pub fn description(no_change_timeout: Duration) -> String {
    let quiet = fmt_secs(no_change_timeout);
    format!(
        r#"Run a bash command in a persistent terminal session.

### The session
* All commands run one after another in the same long-lived bash shell on a real terminal. The working directory, environment variables, shell functions, aliases and an activated virtualenv carry over from one call to the next.
* The session starts in the workspace directory. Multi-line commands and chains with `&&`, `;` or `|` are fine; prefer absolute paths, or `cd` once and rely on it persisting.
* Start long-running services in the background with their output redirected, e.g. `python3 -m http.server 8000 > server.log 2>&1 &`. Background jobs keep running after the call returns.

### Waiting and timeouts
* Without `timeout`, a call returns when the command finishes, or once it has printed nothing new for {quiet}. With `timeout`, it returns when the command finishes or after that many seconds.
* A command that has not finished is NOT stopped: the result says it is still running and shows exit code -1. You can then send an empty `command` to wait for more output, type into it with `is_input` set to true, or interrupt it by sending `C-c` with `is_input` set to true. A new command can only start once the previous one has ended.

### Interactive programs
* With `is_input` true, `command` is typed into the running program followed by Enter, or sent as a single key when it is a key name: `C-c`, `C-d`, `C-z`, `C-<letter>`, `UP`, `DOWN`, `LEFT`, `RIGHT`, `HOME`, `END`, `PGUP`, `PGDN`, `TAB`, `ESC`, `BS`, `ENTER`.
* Prefer non-interactive forms of commands (`apt-get -y`, `git --no-pager`, `npm init -y`). Pagers are set to `cat`. Full-screen programs (vim, less, top) do not work well here.

### Output
* Colors and other terminal escape sequences are removed.
* Output longer than the limit is cut in the middle: the start and the end are shown, and the full output is saved to a file whose path is given, so you can search or page through it with other commands (`grep`, `sed -n '100,200p'`, `tail`).
* Each result ends with the exit code, the current working directory and the Python interpreter on the PATH.

### Resetting
* `reset` set to true kills the session with all its processes and starts a new shell. Use it only when the terminal is stuck; all session state is lost."#
    )
}

/// `username` of the terminal's params: null, or the user the server runs
/// as. The shell is never started as another user, so any other name is
/// refused rather than ignored.
fn check_username(value: &Value) -> Result<(), ToolError> {
    if value.is_null() {
        return Ok(());
    }
    let Some(wanted) = value.as_str() else {
        return Err(ToolError::InvalidArguments(format!(
            "terminal: username must be a string, got {value}"
        )));
    };
    let current = super::executor::process_user_name();
    if current.as_deref() == Some(wanted) {
        return Ok(());
    }
    Err(ToolError::InvalidArguments(format!(
        "terminal: username {wanted:?} is not supported: the shell runs as the server's user ({}); leave username out",
        current.as_deref().unwrap_or("unknown")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_text_has_reference_shape() {
        let obs = TerminalObservation {
            content: vec![Content::text("hi")],
            is_error: false,
            command: Some("echo hi".into()),
            exit_code: Some(0),
            timeout: false,
            metadata: CmdOutputMetadata {
                exit_code: 0,
                working_dir: Some("/w".into()),
                py_interpreter_path: Some("/usr/bin/python".into()),
                suffix: "\n[The command completed with exit code 0.]".into(),
                ..Default::default()
            },
            full_output_save_dir: None,
        };
        let parts = llm_content(&obs);
        assert_eq!(parts.len(), 1);
        assert_eq!(
            parts[0].as_text(),
            Some(
                "hi\n[The command completed with exit code 0.]\n[Current working directory: /w]\n[Python interpreter: /usr/bin/python]\n[Command finished with exit code 0]"
            )
        );
    }

    #[test]
    fn llm_text_for_running_and_error() {
        let mut obs = TerminalObservation {
            content: vec![Content::text("partial")],
            is_error: false,
            command: Some("sleep 9".into()),
            exit_code: Some(-1),
            timeout: true,
            metadata: CmdOutputMetadata {
                suffix: "\n[still running]".into(),
                ..Default::default()
            },
            full_output_save_dir: None,
        };
        assert_eq!(
            llm_content(&obs)[0].as_text(),
            Some("partial\n[still running]")
        );
        obs.is_error = true;
        let parts = llm_content(&obs);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].as_text(), Some(ERROR_HEADER));
    }

    #[test]
    fn schema_has_reference_names_types_and_required() {
        let s = parameters_schema(Duration::from_secs(30));
        let props = s["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(names, ["command", "is_input", "timeout", "reset"]);
        assert_eq!(props["command"]["type"], "string");
        assert_eq!(props["is_input"]["type"], "boolean");
        assert_eq!(props["timeout"]["type"], "number");
        assert_eq!(props["reset"]["type"], "boolean");
        assert_eq!(s["required"], json!(["command"]));
        assert!(!props.contains_key("summary") && !props.contains_key("security_risk"));
    }

    #[test]
    fn description_mentions_the_quiet_period() {
        assert!(description(Duration::from_secs(3)).contains("3 seconds"));
    }
}
