//! `openhands`: an interactive session with the agent (no subcommand;
//! `openhands "TASK"` starts it on a task, `--headless` runs the task
//! without it), a run of one task, resuming a conversation, the settings
//! file, the agent server, the scripted mock LLM, or an offline demo.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): `openhands` (no
//! subcommand: `start` picks the session or a headless run from the reference CLI's flags — a
//! task, `-t`/`-f`, `--headless`, `--resume [--last]`; the interactive session, `tui/` on
//! ratatui: transcript, editor, slash commands, confirmation panel, history), `run/resume`
//! (headless, `--json`), `config` (the reference's `settings.json`), `mcp` (`mcp_cmd`:
//! `~/.openhands/mcp.json`; `mcp_auth`: OAuth tokens in `sdk::mcp_oauth::FileOAuthStates`,
//! authorization before a session), `serve`, `mock-llm`, `demo`; `options` merges flags >
//! environment > settings file > defaults into one agent/conversation setup (`acp_agent`: an
//! `agent_kind: "acp"` settings block through `acp::config::agent_from_settings`;
//! `agent_secrets`: `agent_context.secrets` → the conversation's secrets)
//!
//! `anyhow` only here and in binaries.

mod acp_agent;
mod agent_secrets;
mod config_cmd;
mod control;
mod demo;
mod describe;
mod error;
mod logging;
mod mcp;
mod mcp_auth;
mod mcp_cmd;
mod mock;
mod options;
mod output;
mod paths;
mod policy;
mod run;
mod session;
mod settings;
mod start;
mod store;
mod tool_names;
mod tui;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// The agent server's allocator (`openhands serve` runs the same server):
/// jemalloc, whose background threads return freed memory to the system.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Command line of the `openhands` binary.
#[derive(Debug, Parser)]
#[command(
    name = "openhands",
    version,
    about = "OpenHands agent: an interactive session in this folder (no subcommand), or run tasks, \
             resume conversations, serve the agent server",
    args_conflicts_with_subcommands = true,
    disable_version_flag = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Print the version.
    #[arg(short = 'v', short_alias = 'V', long, action = clap::ArgAction::Version)]
    version: Option<bool>,
    /// Options of the interactive session.
    #[command(flatten)]
    session: start::SessionArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the default agent on a task in a workspace folder.
    Run(run::RunArgs),
    /// Continue a persisted conversation.
    Resume(run::ResumeArgs),
    /// Show or change the settings file (`~/.openhands/settings.json`).
    Config(config_cmd::ConfigArgs),
    /// Manage the MCP servers of the command line (`~/.openhands/mcp.json`).
    Mcp(mcp_cmd::McpArgs),
    /// Start the agent server (same as `openhands-agent-server`).
    Serve(ServeArgs),
    /// Serve the scripted mock LLM (OpenAI/Responses/Anthropic compatible) on 127.0.0.1.
    MockLlm(mock::MockArgs),
    /// Offline demo: the default agent driven by a scripted LLM writes and runs a small program.
    Demo(demo::DemoArgs),
    /// The task-control plane: serve its API, manage tenants, users, credentials and hosts.
    Control(openhands_control::ControlArgs),
}

/// Options of `openhands serve`.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind.
    #[arg(long, default_value_t = 8000)]
    port: u16,
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let service = match &cli.command {
        Some(Command::Serve(_)) => openhands_agent_server::telemetry::SERVICE_NAME,
        _ => logging::SERVICE_NAME,
    };
    let telemetry = logging::init(cli.command.is_none(), service);
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Idle blocking-pool threads (disk writes, process waits) end after a
    // second instead of tokio's ten, so a served burst does not leave them behind.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        let Some(command) = cli.command else {
            return start::start(cli.session).await;
        };
        match command {
            Command::Run(a) => run::run(a).await,
            Command::Resume(a) => run::resume(a).await,
            Command::Config(a) => config_cmd::config(a),
            Command::Mcp(a) => mcp_cmd::mcp(a).await,
            Command::Serve(a) => serve(a).await,
            Command::MockLlm(a) => mock::serve(a).await,
            Command::Demo(a) => demo::demo(a).await,
            Command::Control(a) => control::run(a).await,
        }
    });
    // Work still blocked on I/O (a prompt's read, a tool) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    // The conversations have ended (their root spans with them).
    logging::flush(telemetry);
    match result {
        Ok(code) => code,
        Err(e) => match error::as_usage(&e) {
            Some(u) => {
                eprintln!("error: {u}");
                ExitCode::from(error::USAGE_EXIT_CODE)
            }
            None => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// Parses the command line and notes which agent options came from the
/// environment (an ACP agent refuses the flags but only warns about the
/// variables).
fn parse_cli() -> Cli {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match (&mut cli.command, matches.subcommand()) {
        (None, _) => cli.session.agent.note_sources(&matches),
        (Some(Command::Run(a)), Some((_, sub))) => a.agent.note_sources(sub),
        (Some(Command::Resume(a)), Some((_, sub))) => a.agent.note_sources(sub),
        _ => {}
    }
    cli
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let loaded = openhands_agent_server::Config::load().context("loading the configuration")?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let addr = format!("{}:{}", args.host, args.port);
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    eprintln!("agent server listening on http://{addr}");
    openhands_agent_server::serve(loaded.config, listener).await?;
    Ok(ExitCode::SUCCESS)
}
