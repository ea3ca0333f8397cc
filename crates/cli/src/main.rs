//! `openhands`: run an agent on a task in a folder, resume a conversation,
//! start the agent server, serve the scripted mock LLM, or try an offline demo.

mod demo;
mod mock;
mod output;
mod run;

use clap::{Parser, Subcommand};
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
    about = "OpenHands agent: run tasks, resume conversations, serve the agent server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the default agent on a task in a workspace folder.
    Run(run::RunArgs),
    /// Continue a persisted conversation.
    Resume(run::ResumeArgs),
    /// Start the agent server (same as `openhands-agent-server`).
    Serve(ServeArgs),
    /// Serve the scripted mock LLM (OpenAI/Responses/Anthropic compatible) on 127.0.0.1.
    MockLlm(mock::MockArgs),
    /// Offline demo: the default agent driven by a scripted LLM writes and runs a small program.
    Demo(demo::DemoArgs),
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

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(a) => run::run(a).await,
            Command::Resume(a) => run::resume(a).await,
            Command::Serve(a) => serve(a).await,
            Command::MockLlm(a) => mock::serve(a).await,
            Command::Demo(a) => demo::demo(a).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
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
