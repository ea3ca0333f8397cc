//! The user's desktop: opening a URL in their browser (MCP OAuth, the
//! ChatGPT browser sign-in).

use std::time::Duration;

/// Opens `url` in the user's browser when there is a desktop session to
/// open it in; failures are ignored (the URL is shown anyway).
pub async fn open_browser(url: String) {
    use openhands_workspace::exec::{EnvPolicy, ProcessSpec, RunLimits, run_to_completion};
    let desktop = cfg!(target_os = "macos")
        || openhands_workspace::exec::env::host_var_os("DISPLAY").is_some_and(|v| !v.is_empty())
        || openhands_workspace::exec::env::host_var_os("WAYLAND_DISPLAY")
            .is_some_and(|v| !v.is_empty());
    if !desktop {
        return;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spec = ProcessSpec::new(opener, EnvPolicy::new().child_env()).arg(&url);
    let limits = RunLimits {
        timeout: Duration::from_secs(10),
        linger_after_exit: Some(Duration::from_millis(200)),
        ..RunLimits::default()
    };
    let _ = run_to_completion(
        &spec,
        &limits,
        &tokio_util::sync::CancellationToken::new(),
        4096,
    )
    .await;
}
