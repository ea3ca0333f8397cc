//! `openhands run` and `openhands resume`.

use crate::output::Mode;
use anyhow::{Context, bail};
use openhands_sdk::conversation::EventCallback;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_wire::LlmConfig;
use openhands_wire::event::EventBody;
use openhands_wire::secret::SecretString;
use openhands_wire::state::ExecutionStatus;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use uuid::Uuid;

/// LLM settings shared by `run` and `resume`.
#[derive(Debug, clap::Args)]
pub struct LlmArgs {
    /// Model in LiteLLM form (`openai/gpt-5`, `anthropic/claude-sonnet-4-5`, ...).
    #[arg(long, env = "LLM_MODEL")]
    pub model: Option<String>,
    /// API key of the provider.
    #[arg(long, env = "LLM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Base URL of the provider or of an OpenAI-compatible server.
    #[arg(long, env = "LLM_BASE_URL")]
    pub base_url: Option<String>,
    /// Stream tokens as they arrive.
    #[arg(long)]
    pub stream: bool,
}

impl LlmArgs {
    fn config(&self) -> anyhow::Result<LlmConfig> {
        let Some(model) = self.model.clone().filter(|m| !m.trim().is_empty()) else {
            bail!(
                "no model configured: set LLM_MODEL (e.g. `export LLM_MODEL=openai/gpt-5`) or pass --model; \
                 LLM_API_KEY and LLM_BASE_URL set the key and an OpenAI-compatible endpoint"
            );
        };
        let mut c = LlmConfig::new(model);
        c.api_key = self.api_key.clone().map(SecretString::new);
        c.base_url = self.base_url.clone();
        c.stream = self.stream;
        c.usage_id = "agent".into();
        Ok(c)
    }
}

/// Options of `openhands run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task for the agent.
    pub task: String,
    /// Folder the agent works in.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Iteration limit of the run.
    #[arg(long, default_value_t = 500)]
    pub max_iterations: u32,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Where conversations are stored (default `~/.openhands/conversations`).
    #[arg(long, env = "OPENHANDS_CONVERSATIONS_DIR")]
    pub persistence_dir: Option<PathBuf>,
    /// LLM settings.
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Options of `openhands resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Conversation id (dashed or 32 hex digits).
    pub id: String,
    /// A message to send before continuing.
    #[arg(long)]
    pub message: Option<String>,
    /// Iteration limit of each run (default: the limit stored with the conversation).
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Where conversations are stored (default `~/.openhands/conversations`).
    #[arg(long, env = "OPENHANDS_CONVERSATIONS_DIR")]
    pub persistence_dir: Option<PathBuf>,
    /// LLM settings.
    #[command(flatten)]
    pub llm: LlmArgs,
}

fn default_persistence_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".openhands")
        .join("conversations")
}

fn printer(mode: Mode, stream: bool) -> EventCallback {
    Arc::new(move |e| mode.print(e, stream))
}

/// Runs a conversation to its end and maps the final status to an exit code.
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
    let status = conversation.run().await?;
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
        ExecutionStatus::Paused | ExecutionStatus::Idle => ExitCode::from(130),
        _ => ExitCode::from(4),
    }
}

/// `openhands run`.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let llm = args.llm.config()?;
    let workspace = std::fs::canonicalize(&args.workspace).with_context(|| {
        format!(
            "workspace folder {} does not exist",
            args.workspace.display()
        )
    })?;
    let spec = openhands_tools::presets::get_default_agent(llm, true);
    let agent = Agent::new(spec, openhands_tools::presets::default_registry())?;
    let mode = Mode::from_flags(args.json);
    let options = ConversationOptions {
        persistence_dir: Some(args.persistence_dir.unwrap_or_else(default_persistence_dir)),
        max_iteration_per_run: args.max_iterations,
        callbacks: vec![printer(mode, args.llm.stream)],
        ..ConversationOptions::default()
    };
    let conversation = LocalConversation::new(agent, &workspace, options)?;
    if !args.json {
        eprintln!(
            "conversation {} in {}",
            conversation.id(),
            workspace.display()
        );
    }
    conversation.send_message(args.task)?;
    drive(&conversation, args.json).await
}

/// `openhands resume`.
pub async fn resume(args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let id = Uuid::try_parse(args.id.trim())
        .with_context(|| format!("'{}' is not a conversation id", args.id))?;
    let root = args.persistence_dir.unwrap_or_else(default_persistence_dir);
    let llm = args.llm.config()?;
    let spec = openhands_tools::presets::get_default_agent(llm, true);
    let agent = Agent::new(spec, openhands_tools::presets::default_registry())?;
    let mode = Mode::from_flags(args.json);
    let options = ConversationOptions {
        callbacks: vec![printer(mode, args.llm.stream)],
        ..ConversationOptions::default()
    };
    let conversation = LocalConversation::resume(&root, id, Some(agent), options)
        .with_context(|| format!("cannot resume {id} from {}", root.display()))?;
    if let Some(n) = args.max_iterations {
        conversation.set_max_iterations(n)?;
    }
    if let Some(m) = args.message {
        conversation.send_message(m)?;
    }
    drive(&conversation, args.json).await
}
