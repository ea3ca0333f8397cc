//! Why a browser operation failed.

/// A failure of the browser or of one operation on it. Every variant is
/// shown to the model as an error observation; the run goes on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium executable was found.
    #[error("{0}")]
    Missing(String),
    /// Chromium could not be started or connected to.
    #[error("the browser could not be started: {0}")]
    Start(String),
    /// A DevTools call failed.
    #[error("{0}")]
    Cdp(String),
    /// An operation did not finish in time.
    #[error("the browser operation timed out after {0} seconds")]
    Timeout(u64),
    /// Session recording could not start or stop; the text says why. The
    /// tools answer it as a plain (not failed) observation, as the
    /// reference does.
    #[error("{0}")]
    Recording(String),
    /// The run was interrupted; the browser was closed.
    #[error(
        "the browser operation was interrupted; the browser was closed and starts again on the next browser action"
    )]
    Interrupted,
}

impl From<chromiumoxide::error::CdpError> for BrowserError {
    fn from(e: chromiumoxide::error::CdpError) -> Self {
        BrowserError::Cdp(e.to_string())
    }
}
