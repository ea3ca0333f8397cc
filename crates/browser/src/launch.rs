//! Finding and starting Chromium: headless, its own temporary profile, a
//! DevTools port chosen by Chromium itself, started through
//! `openhands_workspace::exec` (environment policy, own process group, and
//! the conversation's sandbox when it has one).

use crate::error::BrowserError;
use openhands_workspace::exec::{ExecPolicy, GroupChild, ProcessSpec};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Environment variable naming the Chromium executable to use (overrides
/// the search of [`find_chromium`]).
pub const CHROMIUM_ENV: &str = "OH_BROWSER_EXECUTABLE";

/// Where a Chromium-family browser is usually installed on Linux, in the
/// order they are preferred.
const STANDARD_PATHS: [&str; 6] = [
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/usr/bin/microsoft-edge",
    "/usr/bin/microsoft-edge-stable",
];

/// Names looked up on `PATH` when no standard path exists.
const PATH_NAMES: [&str; 4] = ["chromium", "chromium-browser", "google-chrome", "chrome"];

/// The Chromium executable to start: [`CHROMIUM_ENV`] when set, else the
/// first standard install path that exists, else the first match on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) =
        openhands_workspace::exec::env::host_var_os(CHROMIUM_ENV).filter(|p| !p.is_empty())
    {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(p) = STANDARD_PATHS.iter().map(Path::new).find(|p| p.is_file()) {
        return Some(p.to_path_buf());
    }
    let path = openhands_workspace::exec::env::host_var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| PATH_NAMES.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// The message shown when no Chromium can be found.
pub fn chromium_missing_message() -> String {
    format!(
        "No Chromium browser was found, so the browser tools cannot run. Install one \
         (Debian/Ubuntu: `apt-get install chromium`) or set {CHROMIUM_ENV} to its executable."
    )
}

/// How a browser is started.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The executable.
    pub executable: PathBuf,
    /// Run without a window (always true for the agent; false only for
    /// debugging by hand).
    pub headless: bool,
    /// How long Chromium has to open its DevTools endpoint.
    pub startup_timeout: Duration,
    /// Environment policy (and sandbox) of the conversation.
    pub exec: ExecPolicy,
}

/// A running Chromium: the process group, the DevTools WebSocket URL and the
/// profile directory (removed when this is dropped).
#[derive(Debug)]
pub struct Launched {
    /// The browser process (leader of its own group).
    pub child: GroupChild,
    /// `ws://127.0.0.1:<port>/devtools/browser/<id>`.
    pub ws_url: String,
    /// The temporary profile directory.
    pub profile: tempfile::TempDir,
    /// The last lines Chromium wrote to stderr (for error messages).
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

/// The command-line flags for a headless agent browser with `profile`.
fn chromium_args(profile: &Path, headless: bool) -> Vec<String> {
    let mut args = vec![
        format!("--user-data-dir={}", profile.display()),
        "--remote-debugging-port=0".to_string(),
        "--remote-debugging-address=127.0.0.1".to_string(),
        "--no-first-run".to_string(),
        "--no-default-browser-check".to_string(),
        "--disable-dev-shm-usage".to_string(),
        "--disable-gpu".to_string(),
        "--disable-background-networking".to_string(),
        "--disable-component-update".to_string(),
        "--disable-sync".to_string(),
        "--disable-extensions".to_string(),
        "--mute-audio".to_string(),
        "--password-store=basic".to_string(),
        "--use-mock-keychain".to_string(),
        "--window-size=1280,1024".to_string(),
    ];
    if headless {
        args.push("--headless=new".to_string());
    }
    // Chromium's own sandbox refuses to start as root.
    if nix_is_root() {
        args.push("--no-sandbox".to_string());
        args.push("--disable-setuid-sandbox".to_string());
    }
    args.push("about:blank".to_string());
    args
}

fn nix_is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// How many times Chromium is started when it exits before opening its
/// DevTools endpoint: a first start that crashes (seen on loaded machines,
/// with nothing wrong in the set-up) gets one more try.
const START_ATTEMPTS: u32 = 2;

/// Starts Chromium and waits (up to the startup timeout) for its DevTools
/// endpoint. The process is killed again when it does not come up; one that
/// exited early is started once more before the error is reported.
pub async fn launch(options: &LaunchOptions) -> Result<Launched, BrowserError> {
    let mut attempt = 1;
    loop {
        match launch_once(options).await {
            Err(Attempt::ExitedEarly(e)) if attempt < START_ATTEMPTS => {
                tracing::warn!("Chromium exited while starting; starting it again: {e}");
                attempt += 1;
            }
            Err(Attempt::ExitedEarly(e) | Attempt::Failed(e)) => return Err(e),
            Ok(launched) => return Ok(launched),
        }
    }
}

/// Why one start of Chromium failed.
enum Attempt {
    /// Chromium exited before opening its DevTools endpoint.
    ExitedEarly(BrowserError),
    /// Anything else (no profile directory, no executable, a timeout).
    Failed(BrowserError),
}

impl From<BrowserError> for Attempt {
    fn from(e: BrowserError) -> Self {
        Attempt::Failed(e)
    }
}

async fn launch_once(options: &LaunchOptions) -> Result<Launched, Attempt> {
    let sandbox = options.exec.sandbox.as_ref();
    if let Some(sb) = sandbox
        && !sb.config().network
    {
        return Err(BrowserError::Start(
            "the conversation's sandbox has no network, and the browser is driven over a \
             DevTools connection on loopback; enable the sandbox's network to use the browser tools"
                .into(),
        )
        .into());
    }
    let profile = tempfile::Builder::new()
        .prefix("openhands-browser-")
        .tempdir()
        .map_err(|e| BrowserError::Start(format!("cannot create a profile directory: {e}")))?;
    // In a sandbox Chromium shares the network namespace (so its DevTools
    // port on loopback is reachable from here) and sees the host read-only
    // with a private /tmp: the profile, where it also announces its port,
    // is bound in writable.
    let spec = ProcessSpec::new(options.executable.as_os_str(), options.exec.env.child_env())
        .args(chromium_args(profile.path(), options.headless))
        .sandbox(sandbox)
        .sandbox_bind(profile.path(), true);
    let mut child = GroupChild::spawn(&spec).map_err(|e| {
        BrowserError::Start(format!(
            "cannot start {}: {e}",
            options.executable.display()
        ))
    })?;
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(out) = child.take_stdout() {
        tokio::spawn(drain(out, None));
    }
    if let Some(err) = child.take_stderr() {
        tokio::spawn(drain(err, Some(stderr_tail.clone())));
    }
    let port_file = profile.path().join("DevToolsActivePort");
    let deadline = Instant::now() + options.startup_timeout;
    loop {
        if let Some(ws_url) = read_port_file(&port_file).await {
            return Ok(Launched {
                child,
                ws_url,
                profile,
                stderr_tail,
            });
        }
        let exited = child.status().is_some()
            || tokio::time::timeout(Duration::from_millis(50), child.wait())
                .await
                .is_ok();
        if exited || Instant::now() >= deadline {
            child.terminate(Duration::from_secs(2)).await;
            let tail = tail_text(&stderr_tail);
            return Err(if exited {
                Attempt::ExitedEarly(BrowserError::Start(format!(
                    "Chromium exited before opening its DevTools endpoint. {tail}"
                )))
            } else {
                Attempt::Failed(BrowserError::Start(format!(
                    "Chromium did not open its DevTools endpoint in time. {tail}"
                )))
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `ws://127.0.0.1:<port><path>` from Chromium's `DevToolsActivePort` file
/// (port on the first line, browser target path on the second).
async fn read_port_file(path: &Path) -> Option<String> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let target = lines.next()?.trim();
    if !target.starts_with('/') {
        return None;
    }
    Some(format!("ws://127.0.0.1:{port}{target}"))
}

/// Reads a pipe to its end so Chromium never blocks on a full pipe,
/// keeping the last lines when asked.
async fn drain(pipe: impl AsyncRead + Unpin, keep: Option<Arc<Mutex<VecDeque<String>>>>) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(keep) = &keep
            && let Ok(mut k) = keep.lock()
        {
            if k.len() == 20 {
                k.pop_front();
            }
            k.push_back(line);
        }
    }
}

/// The kept stderr lines as one text (empty when none).
pub fn tail_text(tail: &Arc<Mutex<VecDeque<String>>>) -> String {
    let lines: Vec<String> = tail
        .lock()
        .map(|k| k.iter().cloned().collect())
        .unwrap_or_default();
    if lines.is_empty() {
        String::new()
    } else {
        format!("Chromium said:\n{}", lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_make_a_headless_browser_with_its_own_profile() {
        let args = chromium_args(Path::new("/tmp/p"), true);
        assert!(args.contains(&"--user-data-dir=/tmp/p".to_string()));
        assert!(args.contains(&"--headless=new".to_string()));
        assert!(args.contains(&"--remote-debugging-port=0".to_string()));
        assert_eq!(args.last().map(String::as_str), Some("about:blank"));
        let windowed = chromium_args(Path::new("/tmp/p"), false);
        assert!(!windowed.iter().any(|a| a.starts_with("--headless")));
    }

    /// A stand-in for Chromium: appends a line to `starts` each time it runs;
    /// exits at once while `starts` has fewer than `crashes` lines, then
    /// announces a DevTools port in its profile and waits.
    fn fake_chromium(dir: &Path, crashes: usize) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let exe = dir.join("fake-chromium");
        let script = format!(
            "#!/bin/sh\n\
             echo start >> '{starts}'\n\
             if [ \"$(wc -l < '{starts}')\" -le {crashes} ]; then echo 'crashed on purpose' >&2; exit 1; fi\n\
             for a in \"$@\"; do case \"$a\" in --user-data-dir=*) d=\"${{a#--user-data-dir=}}\";; esac; done\n\
             printf '9\\n/devtools/browser/fake\\n' > \"$d/DevToolsActivePort\"\n\
             exec sleep 30\n",
            starts = dir.join("starts").display()
        );
        std::fs::write(&exe, script).unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        exe
    }

    fn options(executable: PathBuf) -> LaunchOptions {
        LaunchOptions {
            executable,
            headless: true,
            startup_timeout: Duration::from_secs(10),
            exec: ExecPolicy::default(),
        }
    }

    fn starts(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("starts"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_chromium_that_crashes_while_starting_is_started_once_more() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut launched = launch(&options(fake_chromium(dir.path(), 1)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(launched.ws_url, "ws://127.0.0.1:9/devtools/browser/fake");
        assert_eq!(starts(dir.path()), 2);
        launched.child.terminate(Duration::from_secs(2)).await;
    }

    #[tokio::test]
    async fn a_chromium_that_always_crashes_is_reported_after_the_second_start() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let err = launch(&options(fake_chromium(dir.path(), 5)))
            .await
            .err()
            .unwrap_or_else(|| panic!("a crashing browser was reported as started"));
        let text = err.to_string();
        assert!(text.contains("exited before opening"), "{text}");
        assert_eq!(starts(dir.path()), START_ATTEMPTS as usize);
    }

    #[tokio::test]
    async fn port_file_is_read_only_when_complete() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = dir.path().join("DevToolsActivePort");
        assert_eq!(read_port_file(&f).await, None);
        std::fs::write(&f, "41121\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_port_file(&f).await, None);
        std::fs::write(&f, "41121\n/devtools/browser/abc\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read_port_file(&f).await.as_deref(),
            Some("ws://127.0.0.1:41121/devtools/browser/abc")
        );
    }
}
