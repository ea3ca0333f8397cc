//! A started browser: what the session keeps while Chromium runs.

use crate::error::BrowserError;
use crate::launch::Launched;
use crate::recording::{Recording, RecordingConfig};
use chromiumoxide::Page;
use chromiumoxide::browser::Browser;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A started browser: the DevTools connection, its event pump, the process
/// and the tabs the agent works with.
pub(crate) struct Running {
    pub(crate) browser: Browser,
    pub(crate) pump: JoinHandle<()>,
    pub(crate) launched: Launched,
    /// Open tabs, in the order they were opened.
    pub(crate) tabs: Vec<Page>,
    /// Index into `tabs` of the tab actions apply to.
    pub(crate) current: usize,
    /// How long waiting for a page load may take.
    pub(crate) load_timeout: Duration,
    /// How recordings are made.
    pub(crate) recording_config: RecordingConfig,
    /// The recording in progress.
    pub(crate) recording: Option<Recording>,
    /// The task writing the recording's events periodically.
    pub(crate) flusher: Option<JoinHandle<()>>,
}

impl Running {
    /// The tab actions apply to.
    pub(crate) fn page(&self) -> Result<&Page, BrowserError> {
        self.tabs
            .get(self.current)
            .ok_or_else(|| BrowserError::Cdp("no tab is open".into()))
    }

    /// Closes the connection and terminates the process group; events of
    /// a recording already taken from the page are written first.
    pub(crate) async fn stop(mut self) {
        if let Some(flusher) = self.flusher.take() {
            flusher.abort();
        }
        if let Some(mut recording) = self.recording.take() {
            recording.save_logged().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(3), self.browser.close()).await;
        self.launched.child.terminate(Duration::from_secs(3)).await;
        self.pump.abort();
    }
}
