//! One browser per conversation: started on first use, every operation
//! bounded by a timeout and stopped by the run's cancellation (which closes
//! the browser: its process group is killed), closed with the conversation.

use crate::error::BrowserError;
use crate::launch::{LaunchOptions, chromium_missing_message, find_chromium, launch};
use crate::ops::{self, BrowserOp, OpOutput};
use crate::record_ops;
use crate::recording::RecordingConfig;
use crate::running::Running;
use chromiumoxide::browser::Browser;
use chromiumoxide::handler::HandlerConfig;
use futures::StreamExt;
use openhands_workspace::exec::ExecPolicy;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// How the conversation's browser is started and how long it may take.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// The Chromium executable; `None` searches for one ([`find_chromium`]).
    pub executable: Option<PathBuf>,
    /// Run without a window.
    pub headless: bool,
    /// How long Chromium has to start.
    pub startup_timeout: Duration,
    /// How long one action may take (page loads included).
    pub action_timeout: Duration,
    /// How long one DevTools call may take.
    pub cdp_timeout: Duration,
    /// Environment policy of the conversation's processes.
    pub exec: ExecPolicy,
    /// How session recordings are made and where they go.
    pub recording: RecordingConfig,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            headless: true,
            startup_timeout: Duration::from_secs(30),
            action_timeout: Duration::from_secs(120),
            cdp_timeout: Duration::from_secs(30),
            exec: ExecPolicy::default(),
            recording: RecordingConfig::default(),
        }
    }
}

/// The browser of one conversation, shared by its browser tools.
pub struct BrowserSession {
    config: BrowserConfig,
    state: Arc<Mutex<Option<Running>>>,
    /// Process group of the running browser (0: none), readable without
    /// the state lock.
    pgid: AtomicI32,
}

impl std::fmt::Debug for BrowserSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserSession")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl BrowserSession {
    /// A session that starts its browser on first use.
    pub fn new(config: BrowserConfig) -> Self {
        Self {
            config,
            state: Arc::new(Mutex::new(None)),
            pgid: AtomicI32::new(0),
        }
    }

    /// Whether the browser is running now.
    pub async fn is_running(&self) -> bool {
        self.state.lock().await.is_some()
    }

    /// The process id of the running browser (its process group id).
    pub async fn pid(&self) -> Option<u32> {
        self.state
            .lock()
            .await
            .as_ref()
            .and_then(|r| r.launched.child.id())
    }

    /// Runs one operation: starts the browser when needed, gives up after
    /// the action timeout, and closes the browser when `cancel` fires or the
    /// operation timed out (it starts again on the next operation).
    pub async fn run(
        &self,
        op: BrowserOp,
        cancel: &CancellationToken,
    ) -> Result<OpOutput, BrowserError> {
        let mut state = self.state.lock().await;
        let limit = self.config.action_timeout + self.config.startup_timeout;
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, self.run_locked(&mut state, op)) => match r {
                Ok(r) => r,
                Err(_) => Err(BrowserError::Timeout(limit.as_secs())),
            },
            () = cancel.cancelled() => Err(BrowserError::Interrupted),
        };
        if matches!(
            outcome,
            Err(BrowserError::Interrupted | BrowserError::Timeout(_))
        ) && let Some(running) = state.take()
        {
            self.pgid.store(0, Ordering::SeqCst);
            running.stop().await;
        }
        outcome
    }

    async fn run_locked(
        &self,
        state: &mut Option<Running>,
        op: BrowserOp,
    ) -> Result<OpOutput, BrowserError> {
        // A browser that crashed (its DevTools connection ended) is
        // replaced by a new one.
        if state.as_ref().is_some_and(|r| r.pump.is_finished())
            && let Some(dead) = state.take()
        {
            self.pgid.store(0, Ordering::SeqCst);
            dead.stop().await;
        }
        if state.is_none() {
            let running = self.start().await?;
            self.pgid
                .store(running.launched.child.pgid().unwrap_or(0), Ordering::SeqCst);
            *state = Some(running);
        }
        let Some(running) = state.as_mut() else {
            return Err(BrowserError::Start("the browser is not running".into()));
        };
        let out = match tokio::time::timeout(self.config.action_timeout, ops::perform(running, op))
            .await
        {
            Ok(r) => r,
            Err(_) => Err(BrowserError::Timeout(self.config.action_timeout.as_secs())),
        };
        self.keep_flusher(running);
        out
    }

    /// Runs the periodic writer while a recording is in progress.
    fn keep_flusher(&self, running: &mut Running) {
        let live = running.flusher.as_ref().is_some_and(|f| !f.is_finished());
        match (running.recording.is_some(), live) {
            (true, false) => {
                running.flusher = Some(spawn_flusher(
                    Arc::downgrade(&self.state),
                    self.config.recording.flush_interval,
                ));
            }
            (false, _) => {
                if let Some(f) = running.flusher.take() {
                    f.abort();
                }
            }
            (true, true) => {}
        }
    }

    async fn start(&self) -> Result<Running, BrowserError> {
        let executable = match &self.config.executable {
            Some(p) => p.clone(),
            None => {
                find_chromium().ok_or_else(|| BrowserError::Missing(chromium_missing_message()))?
            }
        };
        let options = LaunchOptions {
            executable,
            headless: self.config.headless,
            startup_timeout: self.config.startup_timeout,
            exec: self.config.exec.clone(),
        };
        let mut launched = launch(&options).await?;
        let handler_config = HandlerConfig {
            request_timeout: self.config.cdp_timeout,
            ..HandlerConfig::default()
        };
        let connected = tokio::time::timeout(
            self.config.startup_timeout,
            Browser::connect_with_config(launched.ws_url.clone(), handler_config),
        )
        .await;
        let (browser, mut handler) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                launched.child.terminate(Duration::from_secs(2)).await;
                return Err(BrowserError::Start(format!(
                    "cannot connect to DevTools: {e}"
                )));
            }
            Err(_) => {
                launched.child.terminate(Duration::from_secs(2)).await;
                return Err(BrowserError::Start(
                    "connecting to DevTools timed out".into(),
                ));
            }
        };
        let pump = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    tracing::debug!(error = %e, "browser connection ended");
                    break;
                }
            }
        });
        let first =
            tokio::time::timeout(self.config.cdp_timeout, browser.new_page("about:blank")).await;
        let page = match first {
            Ok(Ok(p)) => p,
            other => {
                let why = match other {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".into(),
                };
                let running = Running {
                    browser,
                    pump,
                    launched,
                    tabs: Vec::new(),
                    current: 0,
                    load_timeout: self.config.cdp_timeout,
                    recording_config: self.config.recording.clone(),
                    recording: None,
                    flusher: None,
                };
                running.stop().await;
                return Err(BrowserError::Start(format!("cannot open a tab: {why}")));
            }
        };
        tracing::info!(ws = %launched.ws_url, "browser started");
        Ok(Running {
            browser,
            pump,
            launched,
            tabs: vec![page],
            current: 0,
            load_timeout: self.config.cdp_timeout,
            recording_config: self.config.recording.clone(),
            recording: None,
            flusher: None,
        })
    }

    /// Closes the browser (kills its process group, removes its profile).
    /// Does nothing when it is not running; safe to call more than once.
    pub async fn close(&self) {
        // An action still running holds the state: kill the browser's group
        // so its DevTools calls fail at once and the action lets go.
        let pgid = self.pgid.load(Ordering::SeqCst);
        let guard = match self.state.try_lock() {
            Ok(g) => g,
            Err(_) => {
                if pgid > 0 {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pgid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                self.state.lock().await
            }
        };
        let mut guard = guard;
        let running = guard.take();
        self.pgid.store(0, Ordering::SeqCst);
        drop(guard);
        if let Some(mut r) = running {
            // A recording in progress keeps what the page collected, as the
            // reference's clean-up does.
            if r.recording.is_some() {
                let _ =
                    tokio::time::timeout(Duration::from_secs(10), record_ops::stop(&mut r)).await;
            }
            r.stop().await;
            tracing::info!("browser closed");
        }
    }
}

/// Every `interval`, takes the current page's recording events and writes
/// them (restarting the recorder when the page changed behind our back);
/// ends when the recording or the browser does.
fn spawn_flusher(
    state: std::sync::Weak<Mutex<Option<Running>>>,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(state) = state.upgrade() else {
                return;
            };
            let mut guard = state.lock().await;
            let Some(running) = guard.as_mut() else {
                return;
            };
            if running.recording.is_none() {
                return;
            }
            record_ops::collect(running, true, true).await;
        }
    })
}
