//! A started browser: what the session keeps while Chromium runs.

use crate::error::BrowserError;
use crate::launch::Launched;
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
}

impl Running {
    /// The tab actions apply to.
    pub(crate) fn page(&self) -> Result<&Page, BrowserError> {
        self.tabs
            .get(self.current)
            .ok_or_else(|| BrowserError::Cdp("no tab is open".into()))
    }

    /// Closes the connection and terminates the process group.
    pub(crate) async fn stop(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(3), self.browser.close()).await;
        self.launched.child.terminate(Duration::from_secs(3)).await;
        self.pump.abort();
    }
}
