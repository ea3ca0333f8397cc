//! `openhands-agent-server`: the agent server binary.

use anyhow::Context;
use clap::Parser;
use openhands_agent_server::telemetry::Telemetry;
use openhands_agent_server::{AppState, Config, install_tls_provider, serve_with_front, server};
use openhands_workspace::exec::priority;
use std::net::SocketAddr;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::prelude::*;

/// jemalloc, with background threads that hand freed memory back to the
/// system about a second after it is freed (`.cargo/config.toml` sets the
/// decay). glibc's malloc kept 40 MB of freed memory after a benchmark
/// whose live heap had returned to a few MB.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Command line (the reference's flags; the ones this server cannot honour
/// are refused, naming the flag, rather than ignored).
#[derive(Debug, Parser)]
#[command(
    name = "openhands-agent-server",
    version,
    about = "OpenHands Agent Server"
)]
struct Args {
    /// Host to bind to (default: 127.0.0.1 without session keys, 0.0.0.0 with).
    #[arg(long)]
    host: Option<String>,
    /// Port to bind to.
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// The reference's auto-reload on code changes: refused (a compiled
    /// server has no source to watch).
    #[arg(long)]
    reload: bool,
    /// Starts the browser the browser tools use, loads `about:blank` and
    /// exits: 0 when that works.
    #[arg(long)]
    check_browser: bool,
    /// The reference's Python modules to import (custom tools): refused
    /// (this server loads no Python; tools come from MCP servers and plugins).
    #[arg(long)]
    import_modules: Option<String>,
    /// The reference's extra Python path for `--import-modules`: refused.
    #[arg(long)]
    extra_python_path: Option<String>,
    /// A helper instead of the server.
    #[command(subcommand)]
    command: Option<Helper>,
}

/// Helpers of the control plane's SSH relay (not the server).
#[derive(Debug, clap::Subcommand)]
enum Helper {
    /// Runs a program as this server runs its agent's processes (the
    /// environment policy; the conversations' sandbox on `--workspace`),
    /// replacing this process.
    #[command(hide = true)]
    SandboxExec {
        /// The workspace (working directory; the only writable place).
        #[arg(long)]
        workspace: std::path::PathBuf,
        /// `TERM` of a program on a terminal.
        #[arg(long)]
        term: Option<String>,
        /// Where to write this process's id.
        #[arg(long)]
        pid_file: Option<std::path::PathBuf>,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Ends what a `sandbox-exec` with this pid file started (`--kill`)
    /// and removes the file.
    #[command(hide = true)]
    SandboxExecCleanup {
        /// The pid file of the `sandbox-exec`.
        #[arg(long)]
        pid_file: std::path::PathBuf,
        /// Kill the program (the client left while it ran).
        #[arg(long)]
        kill: bool,
    },
}

/// Runs a helper: `sandbox-exec` returns only on failure (exit 126).
fn helper(helper: Helper) -> anyhow::Result<()> {
    use openhands_agent_server::sandbox_exec::{ExecRequest, cleanup, exec};
    match helper {
        Helper::SandboxExec {
            workspace,
            term,
            pid_file,
            command,
        } => {
            let loaded = Config::load().context("loading the configuration")?;
            let req = ExecRequest {
                workspace,
                term,
                pid_file,
                command,
            };
            let e = exec(&loaded.config, &req);
            eprintln!("sandbox-exec: {e}");
            std::process::exit(126)
        }
        Helper::SandboxExecCleanup { pid_file, kill } => {
            cleanup(&pid_file, kill).with_context(|| format!("cleaning up {}", pid_file.display()))
        }
    }
}

/// Logging to stderr (`RUST_LOG`/`LOG_LEVEL`, `LOG_JSON`) and, when the
/// `OTEL_*` variables ask for it, OpenTelemetry trace and metrics export (returned, to
/// be flushed at exit).
fn init_logging() -> Option<Telemetry> {
    let level =
        openhands_workspace::exec::env::host_var("LOG_LEVEL").unwrap_or_else(|| "info".into());
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level.to_ascii_lowercase()))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let json = openhands_workspace::exec::env::host_var("LOG_JSON")
        .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (telemetry, problem) =
        match Telemetry::from_env(openhands_agent_server::telemetry::SERVICE_NAME) {
            Ok(t) => (t, None),
            Err(e) => (None, Some(e)),
        };
    let registry = tracing_subscriber::registry()
        .with(telemetry.as_ref().and_then(Telemetry::layer))
        .with(telemetry.as_ref().and_then(Telemetry::metrics_layer));
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    if json {
        registry.with(fmt.json().with_filter(filter)).init();
    } else {
        registry.with(fmt.with_filter(filter)).init();
    }
    if let Some(e) = problem {
        tracing::warn!("OpenTelemetry export is off: {e}");
    } else if let Some(t) = &telemetry {
        tracing::info!("OpenTelemetry export: {t:?}");
        for note in t.notes() {
            tracing::warn!("{note}");
        }
    }
    telemetry
}

/// How long an idle blocking-pool thread is kept. Disk writes and process
/// waits run on that pool; tokio's default of ten seconds kept dozens of
/// idle threads (and their stacks) alive long after a burst of work.
const BLOCKING_THREAD_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(1);

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(h) = args.command {
        return helper(h);
    }
    let mut work = tokio::runtime::Builder::new_multi_thread();
    work.enable_all()
        .thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE);
    if priority::lowered_by_process_env() {
        // Everything but the connection front (and this thread) runs below
        // the process's priority: see `lower_work_thread`.
        work.on_thread_start(lower_work_thread);
    }
    let work = work.build().context("starting the async runtime")?;
    // Connections and probes (see `openhands_agent_server::http::front`).
    let front = server::FrontRuntime::start().context("starting the connection runtime")?;
    work.block_on(run(&front, args))
}

/// The first failure to lower a work thread's priority, reported once
/// logging is set up.
static LOWERING_FAILED: std::sync::OnceLock<priority::PriorityError> = std::sync::OnceLock::new();

/// Runs a thread of the work runtime (and the terminals, commands and
/// servers it starts for the agent) at the agent's priority, below the
/// connection front's: under load the kernel then gives a core to the
/// front, which answers probes, before the conversations' work. The
/// reference lowers its terminals the same way; `OH_TERMINAL_PROCESS_PRIORITY=none`
/// in the server's environment turns both off.
fn lower_work_thread() {
    if let Err(e) = priority::lower_this_thread() {
        let _ = LOWERING_FAILED.set(e);
    }
}

/// Raises the soft limit of open files to the hard one. Each live
/// conversation holds a few descriptors (its terminal's PTY, event sockets,
/// files being written), so the usual soft limit of 1,024 would refuse
/// connections and shells from a few hundred conversations on.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!("open files limit: {limit}"),
        Err(e) => tracing::warn!("the open files limit could not be raised: {e}"),
    }
}

/// `--check-browser`: starts the browser the browser tools use, loads
/// `about:blank` and closes it; fails when that does not work.
async fn check_browser() -> anyhow::Result<()> {
    use openhands_browser::ops::BrowserOp;
    let session =
        openhands_browser::BrowserSession::new(openhands_browser::BrowserConfig::default());
    let result = session
        .run(
            BrowserOp::Navigate {
                url: "about:blank".into(),
                new_tab: false,
            },
            &tokio_util::sync::CancellationToken::new(),
        )
        .await;
    session.close().await;
    match result {
        Ok(_) => {
            println!("Browser check passed: about:blank loaded");
            Ok(())
        }
        Err(e) => anyhow::bail!("Browser check failed: {e}"),
    }
}

/// Fails on the reference's flags that only make sense for a Python server,
/// naming the flag: a flag that is accepted and then ignored would let a
/// launcher believe it took effect.
fn refuse_python_only_flags(args: &Args) -> anyhow::Result<()> {
    if args.reload {
        anyhow::bail!(
            "--reload: this server does not reload code on changes; start it without --reload"
        );
    }
    if args.import_modules.is_some() {
        anyhow::bail!(
            "--import-modules: this server cannot import Python modules; add tools through MCP \
             servers or plugins and start it without --import-modules"
        );
    }
    if args.extra_python_path.is_some() {
        anyhow::bail!(
            "--extra-python-path: this server loads no Python; start it without --extra-python-path"
        );
    }
    Ok(())
}

async fn run(front: &server::FrontRuntime, args: Args) -> anyhow::Result<()> {
    install_tls_provider();
    let telemetry = init_logging();
    if args.check_browser {
        return check_browser().await;
    }
    refuse_python_only_flags(&args)?;
    raise_open_files_limit();
    if let Some(e) = LOWERING_FAILED.get() {
        tracing::warn!("agent work runs at the server's own priority: {e}");
    }
    let loaded = Config::load().context("loading the configuration")?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let config = loaded.config;
    let host = args.host.clone().unwrap_or_else(|| {
        if config.auth_required() {
            "0.0.0.0".into()
        } else {
            "127.0.0.1".into()
        }
    });
    let addr: SocketAddr = format!("{host}:{}", args.port)
        .parse()
        .or_else(|_| format!("[{host}]:{}", args.port).parse())
        .with_context(|| format!("invalid --host/--port: {host}:{}", args.port))?;
    if !config.auth_required() && !addr.ip().is_loopback() {
        tracing::warn!(
            "no session API key is configured and the server listens on {addr}: anyone who can reach it can run commands"
        );
    }
    // Before the server can be seen: a SIGTERM from then on shuts it down.
    let shutdown = server::shutdown_signal();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let listener = front
        .adopt(listener)
        .context("moving the listener to the connection runtime")?;
    tracing::info!(
        "OpenHands Agent Server listening on http://{}",
        listener.local_addr()?
    );
    let state = if config.deferred_init {
        tracing::info!("deferred-init mode: waiting for POST /api/init");
        openhands_agent_server::http::setup::dormant(config).shared()
    } else {
        openhands_agent_server::http::setup::attach_default(AppState::new(config))
            .await
            .context("starting the conversation service")?
            .shared()
    };
    server::warm_up(&state);
    let served = serve_with_front(state, listener, shutdown, front.handle())
        .await
        .context("serving");
    if let Some(t) = telemetry {
        let flushed = tokio::task::spawn_blocking(move || t.shutdown()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!("{e}");
        }
    }
    served?;
    Ok(())
}
