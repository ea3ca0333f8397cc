//! The browser tool set: `browser_navigate`, `browser_click`,
//! `browser_type`, `browser_get_state`, `browser_get_content`,
//! `browser_scroll`, `browser_go_back`, tabs, storage and session
//! recording (`browser_start_recording`/`browser_stop_recording`), with the
//! reference's names, parameters and `BrowserObservation`.
//!
//! Each conversation gets one headless Chromium ([`session`]), started on
//! the first browser action through `openhands_workspace::exec` (the
//! environment policy, its own process group and a temporary profile) and
//! driven over the DevTools protocol with `chromiumoxide`; it is closed with
//! the conversation, and killed when a run is interrupted during an action.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): the browser tool
//! set: `launch` (find Chromium, start it through `exec` with a temp profile — inside the
//! conversation's sandbox when it has one, profile bound in, network namespace shared for DevTools
//! —, read `DevToolsActivePort`), `session` (`BrowserSession`: one lazily started browser per
//! conversation, tabs, action timeout, cancel/timeout closes it, `close`), `ops` (each action on
//! `chromiumoxide` + the page scripts in `js/`), `content` (Markdown clean-up, cut and
//! continuation), `observation` (`BrowserObservation`, screenshots as images), `recording` (rrweb
//! source (URL or local file), loading/starting it in a page, the reference's
//! `recording-<ts>/<ts>.json` storage) + `record_ops` (start/stop, events taken before and the
//! recorder restarted after navigating actions; the session's periodic writer task), `tools` (the
//! fourteen `TypedTool`s, `browser_tool_set` factory)
//!
//! its own crate so the heavy `chromiumoxide` build stays out of `tools`' compile unit; `tools`
//! registers and presets it.

pub mod content;
pub mod error;
pub mod launch;
pub mod observation;
pub mod ops;
mod record_ops;
pub mod recording;
mod running;
mod script;
pub mod session;
pub mod tools;

pub use error::BrowserError;
pub use launch::{CHROMIUM_ENV, find_chromium};
pub use observation::BrowserObservation;
pub use recording::{RECORDING_DIR, RRWEB_URL_ENV, RecordingConfig, RrwebSource};
pub use session::{BrowserConfig, BrowserSession};
pub use tools::{BROWSER_TOOL_SET_NAME, browser_tool_set};
