//! `openhands run` and `openhands resume`: one task headless, printed as a
//! readable live view or as JSON lines. With `--confirm` the user is asked
//! on the terminal before actions run.

use crate::describe::{PendingAction, pending_actions, risk_label};
use crate::error::usage;
use crate::options::AgentArgs;
use crate::output::Mode;
use crate::policy::ConfirmMode;
use crate::session::Session;
use crate::settings::Settings;
use anyhow::Context;
use openhands_sdk::LocalConversation;
use openhands_sdk::conversation::EventCallback;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use uuid::Uuid;

/// Options of `openhands run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task for the agent (`-` reads it from standard input).
    pub task: String,
    /// Folder the agent works in.
    #[arg(short = 'w', long, default_value = ".")]
    pub workspace: PathBuf,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Write the agent's last message to FILE when the run ends.
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Where conversations are stored (default `~/.openhands/conversations`).
    #[arg(long, env = "OPENHANDS_CONVERSATIONS_DIR")]
    pub persistence_dir: Option<PathBuf>,
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// Options of `openhands resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Conversation id (dashed, 32 hex digits, or a unique prefix).
    #[arg(required_unless_present = "last")]
    pub id: Option<String>,
    /// Continue the most recently changed conversation.
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// A message to send before continuing.
    #[arg(long)]
    pub message: Option<String>,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Write the agent's last message to FILE when the run ends.
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Where conversations are stored (default `~/.openhands/conversations`).
    #[arg(long, env = "OPENHANDS_CONVERSATIONS_DIR")]
    pub persistence_dir: Option<PathBuf>,
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentArgs,
}

fn printer(mode: Mode, stream: bool) -> EventCallback {
    Arc::new(move |e| mode.print(e, stream))
}

/// What the user answered to a confirmation prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    Always,
}

fn print_pending(pending: &[PendingAction]) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "\nThe agent wants to run:");
    for p in pending {
        let _ = writeln!(
            err,
            "  {} — {} (risk: {})",
            p.tool,
            p.summary.as_deref().unwrap_or(""),
            risk_label(p.risk)
        );
        for d in p.details.iter().take(20) {
            let _ = writeln!(err, "      {}", d.text);
        }
    }
    let _ = write!(err, "Run it? [y]es / [n]o / [a]lways (don't ask again): ");
    let _ = err.flush();
}

/// Reads one answer from the terminal; `None` when stdin closed.
async fn ask() -> Option<Answer> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // A plain thread: a blocked read must not keep the runtime alive at exit.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut line = Vec::new();
            let mut byte = [0u8; 1];
            let eof = loop {
                match stdin.read(&mut byte) {
                    Ok(0) | Err(_) => break true,
                    Ok(_) if byte[0] == b'\n' => break false,
                    Ok(_) => line.push(byte[0]),
                }
            };
            let text = String::from_utf8_lossy(&line).trim().to_ascii_lowercase();
            let answer = match text.as_str() {
                "y" | "yes" => Some(Answer::Yes),
                "n" | "no" => Some(Answer::No),
                "a" | "always" => Some(Answer::Always),
                _ if eof => None,
                _ => {
                    eprint!("Please answer y, n or a: ");
                    continue;
                }
            };
            let _ = tx.send(answer);
            return;
        }
    });
    rx.await.ok().flatten()
}

/// Runs a conversation to its end, asking for confirmations on the terminal,
/// and maps the final status to an exit code.
pub async fn drive(conversation: &LocalConversation, json: bool) -> anyhow::Result<ExitCode> {
    let conv = conversation.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "\ninterrupting… (the conversation is saved; `openhands resume {}` continues it)",
                conv.id()
            );
            let _ = conv.interrupt();
        }
    });
    let status = loop {
        let status = conversation.run().await?;
        if status != ExecutionStatus::WaitingForConfirmation {
            break status;
        }
        let pending = conversation.with_events(pending_actions);
        print_pending(&pending);
        let answer = tokio::select! {
            a = ask() => a,
            _ = tokio::signal::ctrl_c() => None,
        };
        match answer {
            Some(Answer::Yes) => conversation.respond_to_confirmation(true, None)?,
            Some(Answer::No) => conversation.respond_to_confirmation(false, None)?,
            Some(Answer::Always) => {
                conversation.set_confirmation_policy(ConfirmMode::Never.policy())?;
                conversation.respond_to_confirmation(true, None)?;
            }
            None => break conversation.status(),
        }
        if conversation.status() == ExecutionStatus::Paused {
            break ExecutionStatus::Paused;
        }
    };
    ctrl_c.abort();
    conversation.close().await;
    let code = exit_code(conversation, status);
    if !json {
        let stats = conversation.stats();
        eprintln!(
            "\nconversation {} ended: {} (cost ${:.4})",
            conversation.id(),
            status.as_str(),
            stats.total_cost()
        );
    }
    Ok(code)
}

fn exit_code(conversation: &LocalConversation, status: ExecutionStatus) -> ExitCode {
    match status {
        ExecutionStatus::Finished => ExitCode::SUCCESS,
        ExecutionStatus::Stuck => {
            eprintln!("the agent got stuck repeating itself; refine the task and resume");
            ExitCode::from(3)
        }
        ExecutionStatus::Error => {
            let reason = conversation.with_events(|events| {
                events.iter().rev().find_map(|e| match &e.body {
                    EventBody::ConversationError(err) => {
                        Some(format!("{}: {}", err.code, err.detail))
                    }
                    _ => None,
                })
            });
            eprintln!(
                "the run failed: {}",
                reason.unwrap_or_else(|| "unknown error".into())
            );
            ExitCode::from(1)
        }
        // `Running` here: the run saw an interrupt before its status changed.
        ExecutionStatus::Paused
        | ExecutionStatus::Idle
        | ExecutionStatus::Running
        | ExecutionStatus::WaitingForConfirmation => ExitCode::from(130),
        _ => ExitCode::from(4),
    }
}

/// Writes the agent's last message for `--output-last-message`.
async fn write_last_message(conversation: &LocalConversation, file: &Path) -> anyhow::Result<()> {
    let text = conversation.agent_final_response();
    if text.is_empty() {
        eprintln!(
            "warning: the agent sent no message; {} is empty",
            file.display()
        );
    }
    tokio::fs::write(file, text)
        .await
        .with_context(|| format!("cannot write {}", file.display()))
}

fn check_can_confirm(session: &Session) -> anyhow::Result<()> {
    if session.config.confirm != ConfirmMode::Never && !std::io::stdin().is_terminal() {
        return Err(usage(format!(
            "confirmation mode '{}' needs a terminal to ask on; pass --confirm never to run \
             unattended",
            session.config.confirm.as_str()
        )));
    }
    Ok(())
}

fn load_settings() -> anyhow::Result<Settings> {
    Settings::load(&crate::paths::settings_file())
}

fn read_task(task: String) -> anyhow::Result<String> {
    let task = if task == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the task from standard input")?;
        text
    } else {
        task
    };
    if task.trim().is_empty() {
        return Err(usage("the task is empty: say what the agent should do"));
    }
    Ok(task)
}

/// One run without the interactive view: `openhands run`, `openhands
/// resume` and `openhands --headless`.
#[derive(Debug)]
pub struct Headless {
    /// Folder the agent works in; `None` for a resumed conversation's own
    /// (else the current folder).
    pub workspace: Option<PathBuf>,
    /// Where conversations are stored.
    pub root: PathBuf,
    /// Agent options.
    pub agent: AgentArgs,
    /// Print events as JSON lines.
    pub json: bool,
    /// Write the agent's last message here when the run ends.
    pub output_last_message: Option<PathBuf>,
    /// Continue this stored conversation instead of starting one.
    pub resume: Option<Uuid>,
    /// The message to send (required for a new conversation).
    pub task: Option<String>,
    /// Approve every action (`--headless`, as the reference's headless mode).
    pub approve_all: bool,
}

/// Runs [`Headless`].
pub async fn headless(h: Headless) -> anyhow::Result<ExitCode> {
    let workspace = match (&h.workspace, h.resume) {
        (Some(w), _) => std::fs::canonicalize(w)
            .map_err(|_| usage(format!("workspace folder {} does not exist", w.display())))?,
        (None, Some(id)) => crate::store::read_one(&h.root.join(id.simple().to_string()))
            .map(|s| PathBuf::from(s.workspace))
            .filter(|w| w.is_dir())
            .unwrap_or_else(|| PathBuf::from(".")),
        (None, None) => std::fs::canonicalize(".")
            .map_err(|e| usage(format!("the current folder cannot be used: {e}")))?,
    };
    let settings = load_settings()?;
    let mut config = crate::options::resolve(&h.agent, &settings, &workspace, false)?;
    if h.approve_all {
        config.confirm = ConfirmMode::Never;
        config.confirm_explicit = true;
    }
    let session = Session {
        config,
        workspace: workspace.clone(),
        root: h.root,
    };
    check_can_confirm(&session)?;
    crate::mcp_auth::ensure_authorized(
        &session.config.spec.mcp_config,
        session.config.mcp_oauth_states.as_ref(),
    )
    .await?;
    let mode = Mode::from_flags(h.json);
    let stream = session.config.spec.llm.stream;
    let conversation = match h.resume {
        Some(id) => session.resume(id, vec![printer(mode, stream)])?,
        None => {
            if h.task.is_none() {
                return Err(usage("the task is empty: say what the agent should do"));
            }
            let conversation = session.start(None, vec![printer(mode, stream)])?;
            if !h.json {
                eprintln!(
                    "conversation {} in {}",
                    conversation.id(),
                    workspace.display()
                );
            }
            conversation
        }
    };
    if let Some(task) = h.task {
        conversation.send_message(task)?;
    }
    let code = drive(&conversation, h.json).await?;
    if let Some(file) = &h.output_last_message {
        write_last_message(&conversation, file).await?;
    }
    Ok(code)
}

/// `openhands run`.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let task = read_task(args.task)?;
    headless(Headless {
        workspace: Some(args.workspace),
        root: crate::paths::conversations_dir(args.persistence_dir),
        agent: args.agent,
        json: args.json,
        output_last_message: args.output_last_message,
        resume: None,
        task: Some(task),
        approve_all: false,
    })
    .await
}

/// `openhands resume`.
pub async fn resume(args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let root = crate::paths::conversations_dir(args.persistence_dir);
    let id = match crate::store::resume_target(
        &root,
        Some(args.id.as_deref().unwrap_or("")),
        args.last,
    )? {
        crate::store::Start::Open(id) => id,
        _ => {
            return Err(usage(
                "say which conversation: `openhands resume ID` or `openhands resume --last`",
            ));
        }
    };
    headless(Headless {
        workspace: None,
        root,
        agent: args.agent,
        json: args.json,
        output_last_message: args.output_last_message,
        resume: Some(id),
        task: args.message,
        approve_all: false,
    })
    .await
}
