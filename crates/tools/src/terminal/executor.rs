//! The terminal's state machine: runs commands in the session, forwards
//! input to a running command, waits with soft timeouts, interrupts on
//! cancellation, and turns what happened into a [`TerminalObservation`].

use super::keys::{key_bytes, text_input_bytes};
use super::marker::{PromptInfo, shell_ansi_c_quote, shell_single_quote};
use super::output::{Capture, render};
use super::session::{Session, SessionError, SessionSpec, Status};
use super::types::{CmdOutputMetadata, TerminalAction, TerminalObservation};
use nix::sys::signal::Signal;
use openhands_wire::content::Content;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Settings of the state machine.
#[derive(Clone)]
pub(crate) struct Config {
    /// How sessions are started.
    pub spec: SessionSpec,
    /// Return when a command prints nothing for this long (no explicit timeout).
    pub no_change_timeout: Duration,
    /// Return after this long even if output keeps coming (no explicit timeout).
    pub hard_timeout: Duration,
    /// Upper bound for an explicit `timeout`.
    pub max_timeout: Duration,
    /// Longest output text (characters) in one observation.
    pub max_output_chars: usize,
    /// How long the shell may take to show its first prompt.
    pub start_timeout: Duration,
}

/// Text of a reset observation.
pub(crate) const RESET_TEXT: &str = "The terminal session was reset: the old shell and every process it started were stopped, and a new shell was started in the workspace directory. Environment variables, functions and the working directory are back to their initial state.";

const CONTINUE_PREFIX: &str = "[Continued output of the running command:]\n";

const STILL_RUNNING_HELP: &str = "You can send an empty command to wait for more output, send text or keys to the program with is_input=true (for example C-c to interrupt it, C-d for end of input, C-z to suspend it), or set a larger timeout next time.";

/// A command that has been sent and has not finished yet.
#[derive(Debug)]
struct Running {
    command: String,
    prompts_at_send: u64,
    /// Sequence number of the command file (the prompt that ends the
    /// command carries it).
    seq: u64,
    cmd_file: Option<PathBuf>,
    /// An observation for this command was already returned (soft timeout).
    reported: bool,
}

/// Why a wait ended without the command finishing.
#[derive(Debug, Clone, Copy)]
enum Pause {
    NoChange(Duration),
    Explicit(Duration),
    Hard(Duration),
}

/// The per-tool state: one session (started lazily) and the command
/// running in it.
pub(crate) struct Executor {
    cfg: Config,
    session: Option<Arc<Session>>,
    running: Option<Running>,
    /// The current session, reachable without the executor's lock so
    /// `close` can stop it while a command is being waited on.
    slot: Arc<Mutex<Option<Arc<Session>>>>,
    user_host: Option<(Option<String>, Option<String>)>,
}

impl Executor {
    /// A new executor; no session is started yet.
    pub(crate) fn new(cfg: Config, slot: Arc<Mutex<Option<Arc<Session>>>>) -> Self {
        Self {
            cfg,
            session: None,
            running: None,
            slot,
            user_host: None,
        }
    }

    /// Starts the session now if it is not running (eager start).
    pub(crate) async fn start(&mut self) -> Result<(), TerminalError> {
        self.ensure_session().await.map(|_| ())
    }

    /// Stops the session and everything in it.
    pub(crate) async fn shutdown(&mut self) {
        self.stop_session(Duration::from_millis(300)).await;
    }

    /// Executes one action.
    pub(crate) async fn execute(
        &mut self,
        action: &TerminalAction,
        cancel: &CancellationToken,
    ) -> TerminalObservation {
        let command = action.command.trim().to_string();
        if action.reset && action.is_input {
            return error_obs(
                &command,
                "`reset` cannot be combined with `is_input`. Use reset=true alone (with a command or an empty command) to restart the terminal.",
            );
        }
        let mut prefix = String::new();
        if action.reset {
            self.stop_session(Duration::from_millis(300)).await;
            if command.is_empty() {
                return TerminalObservation {
                    content: vec![Content::text(RESET_TEXT)],
                    is_error: false,
                    command: Some("[RESET]".into()),
                    exit_code: Some(0),
                    timeout: false,
                    metadata: CmdOutputMetadata::default(),
                    full_output_save_dir: None,
                };
            }
            prefix.push_str(&format!("[{RESET_TEXT}]\n\n"));
        }
        let mut obs = if action.is_input {
            self.input(action, &command, cancel).await
        } else if command.is_empty() {
            self.more_output(action, cancel).await
        } else {
            self.new_command(action, &command, &mut prefix, cancel)
                .await
        };
        if !prefix.is_empty() {
            obs.metadata.prefix = format!("{prefix}{}", obs.metadata.prefix);
        }
        if action.reset {
            obs.command = Some(format!("[RESET] {command}"));
        }
        obs
    }

    async fn input(
        &mut self,
        action: &TerminalAction,
        text: &str,
        cancel: &CancellationToken,
    ) -> TerminalObservation {
        let (Some(session), Some(_)) = (self.session.clone(), self.running.as_ref()) else {
            return error_obs(
                text,
                "No command is running, so there is nothing to send input to. To run a command, send it with is_input=false.",
            );
        };
        let st = session.status();
        if let Some(r) = self.running.as_ref()
            && (finished(&st, r.prompts_at_send, r.seq) || st.exited())
        {
            // Typing now would reach the shell, not the program.
            let mut obs = self.wait(&TerminalAction::command(""), text, cancel).await;
            if !text.is_empty() {
                obs.metadata
                    .suffix
                    .push_str("\n[The command had already finished, so your input was not sent.]");
            }
            return obs;
        }
        if !text.is_empty() {
            // Typed text keeps its indentation and line breaks (a Python
            // block in a REPL needs both); only key names are trimmed.
            let bytes = key_bytes(text).unwrap_or_else(|| text_input_bytes(&action.command));
            if let Err(e) = blocking_write(&session, bytes).await {
                return error_obs(text, &e.to_string());
            }
        }
        self.wait(action, text, cancel).await
    }

    async fn more_output(
        &mut self,
        action: &TerminalAction,
        cancel: &CancellationToken,
    ) -> TerminalObservation {
        if self.running.is_none() || self.session.is_none() {
            return error_obs(
                "",
                "No command is running, so there is no further output to show. Send a non-empty command to run it.",
            );
        }
        self.wait(action, "", cancel).await
    }

    async fn new_command(
        &mut self,
        action: &TerminalAction,
        command: &str,
        prefix: &mut String,
        cancel: &CancellationToken,
    ) -> TerminalObservation {
        if let (Some(session), Some(running)) = (self.session.clone(), self.running.as_ref()) {
            let st = session.status();
            if finished(&st, running.prompts_at_send, running.seq) || st.exited() {
                // The previous command ended after its last report.
                let info = st.last_prompt.clone().unwrap_or_default();
                let budget = self.cfg.max_output_chars / 4;
                let (text, _) = take_rendered(&session, budget).await;
                let ended = if st.exited() {
                    "[The previous command's shell has exited.".to_string()
                } else {
                    format!(
                        "[The previous command finished with exit code {}.",
                        info.exit_code
                    )
                };
                let text = text.trim_end();
                if text.is_empty() {
                    prefix.push_str(&format!("{ended}]\n"));
                } else {
                    prefix.push_str(&format!(
                        "{ended} Its remaining output:]\n{text}\n[End of the previous command's output.]\n\n"
                    ));
                }
                self.finish_running().await;
            } else {
                let previous = running.command.clone();
                let (text, dir) = take_rendered(&session, self.cfg.max_output_chars).await;
                if let Some(r) = self.running.as_mut() {
                    r.reported = true;
                }
                return TerminalObservation {
                    content: vec![Content::text(text.trim_end())],
                    is_error: true,
                    command: Some(command.to_string()),
                    exit_code: Some(-1),
                    timeout: false,
                    metadata: CmdOutputMetadata {
                        prefix: CONTINUE_PREFIX.into(),
                        suffix: format!(
                            "\n[Your command \"{command}\" was NOT run: the previous command (\"{previous}\") is still running, and a new command can only start after it ends. {STILL_RUNNING_HELP}]"
                        ),
                        ..Default::default()
                    },
                    full_output_save_dir: dir,
                };
            }
        }
        if let Some(session) = &self.session
            && session.status().exited()
        {
            let code = session.status().exit_code.unwrap_or(-1);
            self.stop_session(Duration::from_millis(100)).await;
            prefix.push_str(&format!(
                "[The previous shell had exited (code {code}); a new shell session was started, so environment variables and the working directory are back to their initial state.]\n\n"
            ));
        }
        let session = match self.ensure_session().await {
            Ok(s) => s,
            Err(e) => return error_obs(command, &e.to_string()),
        };
        // Output that arrived while idle (background jobs) stays in the
        // capture and is shown with this command's output.
        let secrets: Vec<(String, String)> = self
            .cfg
            .spec
            .secrets
            .secrets_named_in(command)
            .into_iter()
            .filter(|(name, _)| valid_env_name(name))
            .collect();
        let (seq, path) = session.next_command_path();
        let script = command_script(&path, seq, command, &secrets);
        let line = format!(
            " . {}; eval \"$__oh_cmd\"\n",
            shell_single_quote(&path.to_string_lossy())
        );
        let prompts_at_send = session.status().prompts;
        let s2 = session.clone();
        let p2 = path.clone();
        let line2 = line.clone();
        let sent = run_blocking(Duration::from_secs(10), move || {
            s2.write_private_file(&p2, &script)?;
            s2.prepare_for_command();
            s2.write(line2.as_bytes())
        })
        .await;
        if let Err(e) = sent {
            let _ = std::fs::remove_file(&path);
            return error_obs(command, &e.to_string());
        }
        self.running = Some(Running {
            command: command.to_string(),
            prompts_at_send,
            seq,
            cmd_file: Some(path),
            reported: false,
        });
        let mut obs = self.wait(action, command, cancel).await;
        // The typed line is not echoed (echo is off), but a program may have
        // turned echo back on: drop our own line if it shows up.
        if let Some(Content::Text(t)) = obs.content.first_mut() {
            let echoed = line.trim_end_matches('\n');
            if let Some(rest) = t.text.strip_prefix(echoed) {
                t.text = rest.trim_start_matches('\n').to_string();
            }
        }
        obs
    }

    /// Waits until the running command finishes, the shell exits, a
    /// timeout passes, or `cancel` fires.
    async fn wait(
        &mut self,
        action: &TerminalAction,
        shown_command: &str,
        cancel: &CancellationToken,
    ) -> TerminalObservation {
        let Some(session) = self.session.clone() else {
            return error_obs(shown_command, "The terminal session is not running.");
        };
        let Some((prompts_at_send, seq)) =
            self.running.as_ref().map(|r| (r.prompts_at_send, r.seq))
        else {
            return error_obs(shown_command, "No command is running.");
        };
        let explicit = action
            .timeout
            .map(|t| Duration::from_secs_f64(t.max(0.0)).min(self.cfg.max_timeout));
        let call_start = Instant::now();
        let mut rx = session.subscribe();
        loop {
            rx.borrow_and_update();
            let st = session.status();
            if finished(&st, prompts_at_send, seq) {
                return self.completed(&session, &st, action, shown_command).await;
            }
            if st.exited() {
                return self.shell_exited(&session, shown_command).await;
            }
            let (deadline, pause) = match explicit {
                Some(t) => (call_start + t, Pause::Explicit(t)),
                None => {
                    let quiet_since = st.last_output.max(call_start);
                    let no_change = quiet_since + self.cfg.no_change_timeout;
                    let hard = call_start + self.cfg.hard_timeout;
                    if no_change <= hard {
                        (no_change, Pause::NoChange(self.cfg.no_change_timeout))
                    } else {
                        (hard, Pause::Hard(self.cfg.hard_timeout))
                    }
                }
            };
            if Instant::now() >= deadline {
                return self.paused(&session, shown_command, pause).await;
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                _ = tokio::time::sleep_until(deadline.into()) => {}
                _ = cancel.cancelled() => {
                    return self.interrupted(&session, prompts_at_send, seq, shown_command).await;
                }
            }
        }
    }

    async fn completed(
        &mut self,
        session: &Arc<Session>,
        st: &Status,
        action: &TerminalAction,
        shown_command: &str,
    ) -> TerminalObservation {
        let info = st.last_prompt.clone().unwrap_or_default();
        let reported = self.running.as_ref().is_some_and(|r| r.reported);
        let (text, dir) = take_rendered(session, self.cfg.max_output_chars).await;
        self.finish_running().await;
        let key = if action.is_input && key_bytes(shown_command).is_some() {
            format!(" {} was sent.", shown_command.trim())
        } else {
            String::new()
        };
        let mut metadata = self.metadata_from(&info);
        metadata.prefix = if reported {
            CONTINUE_PREFIX.into()
        } else {
            String::new()
        };
        metadata.suffix = format!(
            "\n[The command completed with exit code {}.{key}]",
            info.exit_code
        );
        TerminalObservation {
            content: vec![Content::text(text.trim_end())],
            is_error: false,
            command: Some(shown_command.to_string()),
            exit_code: Some(info.exit_code),
            timeout: false,
            metadata,
            full_output_save_dir: dir,
        }
    }

    async fn paused(
        &mut self,
        session: &Arc<Session>,
        shown_command: &str,
        pause: Pause,
    ) -> TerminalObservation {
        let (text, dir) = take_rendered(session, self.cfg.max_output_chars).await;
        let reported = match self.running.as_mut() {
            Some(r) => std::mem::replace(&mut r.reported, true),
            None => false,
        };
        let why = match pause {
            Pause::NoChange(d) => format!(
                "The command has printed no new output for {} and is still running.",
                fmt_secs(d)
            ),
            Pause::Explicit(d) => format!(
                "The command is still running after {} (the timeout of this call).",
                fmt_secs(d)
            ),
            Pause::Hard(d) => format!(
                "The command is still running after {} of continuous output.",
                fmt_secs(d)
            ),
        };
        TerminalObservation {
            content: vec![Content::text(text.trim_end())],
            is_error: false,
            command: Some(shown_command.to_string()),
            exit_code: Some(-1),
            timeout: true,
            metadata: CmdOutputMetadata {
                prefix: if reported {
                    CONTINUE_PREFIX.into()
                } else {
                    String::new()
                },
                suffix: format!("\n[{why} {STILL_RUNNING_HELP}]"),
                ..Default::default()
            },
            full_output_save_dir: dir,
        }
    }

    async fn shell_exited(
        &mut self,
        session: &Arc<Session>,
        shown_command: &str,
    ) -> TerminalObservation {
        // Let the reader drain the terminal (end of file, or a quiet moment
        // when a leftover background job keeps it open) and the exit
        // watcher report the exit status.
        let end = Instant::now() + Duration::from_millis(1000);
        loop {
            let st = session.status();
            let drained = st.eof || st.last_output.elapsed() >= Duration::from_millis(100);
            if (drained && st.exit_code.is_some()) || Instant::now() >= end {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let code = session.status().exit_code.unwrap_or(-1);
        let (text, dir) = take_rendered(session, self.cfg.max_output_chars).await;
        self.stop_session(Duration::from_millis(100)).await;
        TerminalObservation {
            content: vec![Content::text(text.trim_end())],
            is_error: false,
            command: Some(shown_command.to_string()),
            exit_code: Some(code),
            timeout: false,
            metadata: CmdOutputMetadata {
                exit_code: code,
                suffix: format!(
                    "\n[The shell exited with code {code}. The next command starts a new shell session: environment variables and the working directory will be back to their initial state.]"
                ),
                ..Default::default()
            },
            full_output_save_dir: dir,
        }
    }

    /// Cancellation: C-c, then SIGINT and SIGKILL to the foreground job if
    /// the command does not stop; returns within about three seconds.
    async fn interrupted(
        &mut self,
        session: &Arc<Session>,
        prompts_at_send: u64,
        seq: u64,
        shown_command: &str,
    ) -> TerminalObservation {
        let _ = blocking_write(session, vec![0x03]).await;
        let mut done =
            wait_for_prompt(session, prompts_at_send, seq, Duration::from_millis(700)).await;
        if !done {
            session.signal_foreground(Signal::SIGINT);
            done = wait_for_prompt(session, prompts_at_send, seq, Duration::from_millis(700)).await;
        }
        if !done {
            session.signal_foreground(Signal::SIGKILL);
            done =
                wait_for_prompt(session, prompts_at_send, seq, Duration::from_millis(1000)).await;
        }
        let st = session.status();
        let note = "\n[The command was interrupted because the run was cancelled.]";
        if done && !st.exited() {
            let mut obs = self
                .completed(
                    session,
                    &st,
                    &TerminalAction::command(shown_command),
                    shown_command,
                )
                .await;
            obs.metadata.suffix.push_str(note);
            obs
        } else if st.exited() {
            self.shell_exited(session, shown_command).await
        } else {
            let mut obs = self
                .paused(session, shown_command, Pause::Explicit(Duration::ZERO))
                .await;
            obs.metadata.suffix = format!(
                "{note}\n[It did not stop within a few seconds and may still be running. {STILL_RUNNING_HELP}]"
            );
            obs
        }
    }

    fn metadata_from(&mut self, info: &PromptInfo) -> CmdOutputMetadata {
        let (username, hostname) = self.user_host.clone().unwrap_or((None, None));
        CmdOutputMetadata {
            exit_code: info.exit_code,
            pid: info.last_bg_pid,
            username,
            hostname,
            working_dir: Some(info.working_dir.clone()).filter(|s| !s.is_empty()),
            py_interpreter_path: Some(info.python.clone()).filter(|s| !s.is_empty()),
            prefix: String::new(),
            suffix: String::new(),
        }
    }

    /// Forgets the running command and deletes its command file.
    async fn finish_running(&mut self) {
        if let Some(r) = self.running.take()
            && let Some(path) = r.cmd_file
        {
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(path)).await;
        }
    }

    async fn ensure_session(&mut self) -> Result<Arc<Session>, TerminalError> {
        if let Some(s) = &self.session {
            return Ok(s.clone());
        }
        let spec = self.cfg.spec.clone();
        let want_user_host = self.user_host.is_none();
        let started = tokio::task::spawn_blocking(move || {
            let user_host = want_user_host.then(user_and_host);
            Session::start(&spec).map(|s| (s, user_host))
        })
        .await
        .map_err(TerminalError::StartWorker)?;
        let (session, user_host) = started?;
        if let Some(uh) = user_host {
            self.user_host = Some(uh);
        }
        *self.slot.lock() = Some(session.clone());
        if !wait_for_prompt(&session, 0, 0, self.cfg.start_timeout).await {
            let (text, _) = take_rendered(&session, 2000).await;
            let s = session.clone();
            let _ =
                tokio::task::spawn_blocking(move || s.terminate(Duration::from_millis(100))).await;
            *self.slot.lock() = None;
            return Err(TerminalError::NotReady {
                limit: self.cfg.start_timeout,
                output: text.trim().to_string(),
            });
        }
        if session.status().exited() {
            let (text, _) = take_rendered(&session, 2000).await;
            *self.slot.lock() = None;
            return Err(TerminalError::ExitedAtStart(text.trim().to_string()));
        }
        // Discard start-up noise (e.g. from ~/.bashrc).
        let s = session.clone();
        let _ = tokio::task::spawn_blocking(move || discard(s.take_output())).await;
        self.session = Some(session.clone());
        Ok(session)
    }

    async fn stop_session(&mut self, grace: Duration) {
        self.running = None;
        let session = self.session.take();
        let mut slot = self.slot.lock().take();
        if let Some(s) = session.or(slot.take()) {
            let _ = tokio::task::spawn_blocking(move || s.terminate(grace)).await;
        }
    }
}

/// Whether the prompt ending command `seq` (sent after `after` prompts)
/// has arrived.
fn finished(st: &Status, after: u64, seq: u64) -> bool {
    st.prompts > after && st.last_prompt.as_ref().is_some_and(|p| p.seq >= seq)
}

/// Waits up to `limit` for the prompt ending command `seq` (or the shell's
/// exit); `true` when it came.
async fn wait_for_prompt(session: &Arc<Session>, after: u64, seq: u64, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let mut rx = session.subscribe();
    loop {
        rx.borrow_and_update();
        let st = session.status();
        if finished(&st, after, seq) || st.exited() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            _ = tokio::time::sleep_until(end.into()) => {}
        }
    }
}

/// Takes the captured output and renders it for the model (blocking work
/// on the blocking pool). Returns the text and the spill directory when the
/// text was truncated.
async fn take_rendered(session: &Arc<Session>, max_chars: usize) -> (String, Option<String>) {
    let s = session.clone();
    let budget = max_chars.saturating_sub(1000).max(max_chars / 2);
    let result =
        tokio::task::spawn_blocking(move || render(s.take_output().finish(), budget)).await;
    match result {
        Ok(r) => (
            r.text,
            r.spill_dir.map(|d| d.to_string_lossy().into_owned()),
        ),
        Err(e) => (format!("[output unavailable: {e}]"), None),
    }
}

fn discard(capture: Capture) {
    if let Some(p) = capture.finish().spill_path {
        let _ = std::fs::remove_file(p);
    }
}

async fn blocking_write(session: &Arc<Session>, bytes: Vec<u8>) -> Result<(), TerminalError> {
    let s = session.clone();
    run_blocking(Duration::from_secs(5), move || s.write(&bytes)).await
}

/// Runs blocking session work with a time limit.
async fn run_blocking<F>(limit: Duration, f: F) -> Result<(), TerminalError>
where
    F: FnOnce() -> Result<(), SessionError> + Send + 'static,
{
    match tokio::time::timeout(limit, tokio::task::spawn_blocking(f)).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(e.into()),
        Ok(Err(e)) => Err(TerminalError::Worker(e)),
        Err(_) => Err(TerminalError::WriteStalled(limit)),
    }
}

fn secs(d: &Duration) -> String {
    fmt_secs(*d)
}

/// Why the terminal could not start or take input (the text is shown).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TerminalError {
    /// The session could not be started or written to.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The blocking start-up task did not finish.
    #[error("cannot start the shell: {0}")]
    StartWorker(#[source] tokio::task::JoinError),
    /// The shell gave no prompt in time.
    #[error(
        "The shell did not become ready within {}. Its output: {output}",
        secs(.limit)
    )]
    NotReady {
        /// The start-up limit.
        limit: Duration,
        /// What it printed.
        output: String,
    },
    /// The shell ended while starting (what it printed).
    #[error("The shell exited during start-up. Its output: {0}")]
    ExitedAtStart(String),
    /// A blocking terminal task did not finish.
    #[error("terminal worker failed: {0}")]
    Worker(#[source] tokio::task::JoinError),
    /// The program does not read its input.
    #[error(
        "writing to the terminal did not finish within {} (the program is not reading its input)",
        secs(.0)
    )]
    WriteStalled(Duration),
}

/// The command file: exports of the secrets the command names, then the
/// command itself in `__oh_cmd` (run by `eval` on the typed line). A file
/// carrying secrets deletes itself as soon as it is read.
pub(crate) fn command_script(
    path: &std::path::Path,
    seq: u64,
    command: &str,
    secrets: &[(String, String)],
) -> String {
    let mut s = String::new();
    if !secrets.is_empty() {
        s.push_str(&format!(
            "\\command rm -f -- {} 2>/dev/null\n",
            shell_single_quote(&path.to_string_lossy())
        ));
        for (name, value) in secrets {
            s.push_str(&format!("export {name}={}\n", shell_ansi_c_quote(value)));
        }
    }
    s.push_str(&format!(
        "__oh_seq={seq}\n__oh_cmd={}\n",
        shell_ansi_c_quote(command)
    ));
    s
}

fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn error_obs(command: &str, message: &str) -> TerminalObservation {
    TerminalObservation {
        content: vec![Content::text(message)],
        is_error: true,
        command: Some(command.to_string()),
        exit_code: None,
        timeout: false,
        metadata: CmdOutputMetadata::default(),
        full_output_save_dir: None,
    }
}

/// `5 seconds`, `1.5 seconds`, `1 second`.
pub(crate) fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - 1.0).abs() < f64::EPSILON {
        "1 second".into()
    } else if s.fract() == 0.0 {
        format!("{} seconds", s as u64)
    } else {
        format!("{s:.1} seconds")
    }
}

/// The name of the user this process runs as, from the user database
/// (blocking).
pub(super) fn process_user_name() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The user name and host name for the metadata (blocking: may consult
/// the user database).
fn user_and_host() -> (Option<String>, Option<String>) {
    let user = process_user_name().or_else(|| openhands_workspace::exec::env::host_var("USER"));
    let host = nix::unistd::gethostname()
        .ok()
        .map(|h| h.to_string_lossy().into_owned());
    (user, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        assert!(valid_env_name("API_KEY"));
        assert!(valid_env_name("_x1"));
        assert!(!valid_env_name("1X"));
        assert!(!valid_env_name("A-B"));
        assert!(!valid_env_name(""));
    }

    #[test]
    fn script_quotes_command_and_secrets() {
        let p = std::path::Path::new("/tmp/d/cmd0.sh");
        let s = command_script(p, 4, "echo 'hi'\nls", &[]);
        assert_eq!(s, "__oh_seq=4\n__oh_cmd=$'echo \\'hi\\'\\nls'\n");
        let s = command_script(p, 5, "echo $TOKEN", &[("TOKEN".into(), "a'b".into())]);
        assert!(s.starts_with("\\command rm -f -- '/tmp/d/cmd0.sh' 2>/dev/null\n"));
        assert!(s.contains("export TOKEN=$'a\\'b'\n"));
    }

    #[test]
    fn only_the_prompt_of_the_command_finishes_it() {
        let status = |prompts, seq| Status {
            prompts,
            last_prompt: Some(PromptInfo {
                seq,
                ..Default::default()
            }),
            last_output: Instant::now(),
            exit_code: None,
            eof: false,
        };
        assert!(!finished(&status(3, 4), 3, 5));
        assert!(
            !finished(&status(4, 4), 3, 5),
            "stray prompt of the previous command"
        );
        assert!(finished(&status(4, 5), 3, 5));
        assert!(finished(&status(6, 5), 3, 5));
        assert!(finished(&status(1, 0), 0, 0), "first prompt means ready");
    }

    #[test]
    fn seconds_format() {
        assert_eq!(fmt_secs(Duration::from_secs(30)), "30 seconds");
        assert_eq!(fmt_secs(Duration::from_secs(1)), "1 second");
        assert_eq!(fmt_secs(Duration::from_millis(1500)), "1.5 seconds");
    }
}
