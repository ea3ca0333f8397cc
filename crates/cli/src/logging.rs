//! Where log lines go.

/// Sets up logging (`LOG_LEVEL` or `RUST_LOG`, default `warn`): to stderr,
/// or, for the interactive session, to `<user directory>/cli.log`.
pub fn init(interactive: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if !interactive {
        let _ = builder.with_writer(std::io::stderr).try_init();
        return;
    }
    // The screen belongs to the session: logs go to a file.
    let dir = crate::paths::openhands_dir();
    let file = openhands_sdk::profiles::create_private_dir(&dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("cli.log"))
    });
    let _ = match file {
        Ok(f) => builder
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
            .try_init(),
        Err(_) => builder.with_writer(std::io::sink).try_init(),
    };
}
