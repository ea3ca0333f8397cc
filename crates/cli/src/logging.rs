//! Where log lines go, and OpenTelemetry export.

use openhands_agent_server::telemetry::Telemetry;
use tracing_subscriber::Layer;
use tracing_subscriber::prelude::*;

/// `service.name` of the CLI's own runs (the `serve` command exports as
/// the agent server).
pub const SERVICE_NAME: &str = "openhands-cli";

/// Sets up logging (`LOG_LEVEL` or `RUST_LOG`, default `warn`): to stderr,
/// or, for the interactive session, to `<user directory>/cli.log`; and,
/// when the `OTEL_*` or `LMNR_*` variables ask for it, OpenTelemetry trace
/// and metrics export as `service` (returned, to be flushed at exit; see
/// `openhands_agent_server::telemetry`).
pub fn init(interactive: bool, service: &str) -> Option<Telemetry> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let (telemetry, problem) = match Telemetry::from_env(service) {
        Ok(t) => (t, None),
        Err(e) => (None, Some(e)),
    };
    // The log filter applies to the log lines only: the exported spans are
    // TRACE-level and chosen by the telemetry layers themselves.
    let registry = tracing_subscriber::registry()
        .with(telemetry.as_ref().and_then(Telemetry::layer))
        .with(telemetry.as_ref().and_then(Telemetry::metrics_layer));
    let fmt = tracing_subscriber::fmt::layer();
    let installed = if !interactive {
        registry
            .with(fmt.with_writer(std::io::stderr).with_filter(filter))
            .try_init()
    } else {
        // The screen belongs to the session: logs go to a file.
        let dir = crate::paths::openhands_dir();
        let file = openhands_sdk::profiles::create_private_dir(&dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("cli.log"))
        });
        match file {
            Ok(f) => registry
                .with(
                    fmt.with_ansi(false)
                        .with_writer(std::sync::Mutex::new(f))
                        .with_filter(filter),
                )
                .try_init(),
            Err(_) => registry
                .with(fmt.with_writer(std::io::sink).with_filter(filter))
                .try_init(),
        }
    };
    if installed.is_err() {
        return None;
    }
    if let Some(e) = problem {
        tracing::warn!("OpenTelemetry export is off: {e}");
    }
    for note in telemetry.iter().flat_map(Telemetry::notes) {
        tracing::warn!("{note}");
    }
    telemetry
}

/// Exports what is still buffered (call off the async runtime, after the
/// conversations ended).
pub fn flush(telemetry: Option<Telemetry>) {
    if let Some(t) = telemetry
        && let Err(e) = t.shutdown()
    {
        tracing::warn!("OpenTelemetry export at exit failed: {e}");
    }
}
