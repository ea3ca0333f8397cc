//! Session recording with rrweb: where the library comes from, loading and
//! starting it in a page, taking the events the page collected, and saving
//! them as the reference does (`<root>/recording-<UTC timestamp>/` holding
//! `<UTC timestamp>.json` files, each one JSON array of rrweb events).

use crate::error::BrowserError;
use crate::script::{eval, eval_json_text, run_script};
use chromiumoxide::Page;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable naming where rrweb is loaded from: an `http(s)://`
/// URL the page loads as a script, or a local file (path or `file://` URL)
/// whose text is run in the page directly (works without any network).
pub const RRWEB_URL_ENV: &str = "OH_BROWSER_RRWEB_URL";
/// The reference's rrweb URL, used when nothing else is configured.
pub const DEFAULT_RRWEB_URL: &str = "https://unpkg.com/rrweb@2.0.0-alpha.17/dist/rrweb.umd.cjs";
/// Where recordings go, relative to the workspace (the reference's
/// `BROWSER_RECORDING_OUTPUT_DIR`).
pub const RECORDING_DIR: &str = ".agent_tmp/browser_observations";
/// Largest local rrweb file accepted (the library is about 0.5 MB).
const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

const LOAD_JS: &str = include_str!("js/recording_load.js");
const START_JS: &str = include_str!("js/recording_start.js");
const TAKE_JS: &str = include_str!("js/recording_take.js");

/// Where the rrweb library comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RrwebSource {
    /// A URL the page loads with a `<script>` element.
    Url(String),
    /// A local file run in the page over DevTools.
    File(PathBuf),
}

impl RrwebSource {
    /// `http(s)://…` is a URL, `file://…` and anything else a local path.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if text.starts_with("http://") || text.starts_with("https://") {
            RrwebSource::Url(text.to_string())
        } else if let Some(path) = text.strip_prefix("file://") {
            RrwebSource::File(PathBuf::from(path))
        } else {
            RrwebSource::File(PathBuf::from(text))
        }
    }

    /// [`RRWEB_URL_ENV`] when set, else the reference's CDN URL.
    pub fn from_env() -> Self {
        match openhands_workspace::exec::env::host_var(RRWEB_URL_ENV) {
            Some(v) if !v.trim().is_empty() => Self::parse(&v),
            _ => RrwebSource::Url(DEFAULT_RRWEB_URL.to_string()),
        }
    }

    /// How the source is named in messages.
    pub fn describe(&self) -> String {
        match self {
            RrwebSource::Url(u) => u.clone(),
            RrwebSource::File(p) => p.display().to_string(),
        }
    }
}

/// How recordings are made and kept.
#[derive(Debug, Clone)]
pub struct RecordingConfig {
    /// Where rrweb comes from.
    pub source: RrwebSource,
    /// The directory each recording gets a `recording-<timestamp>` folder in.
    pub output_root: PathBuf,
    /// How often collected events are written to a file.
    pub flush_interval: Duration,
    /// How long loading rrweb into a page may take.
    pub load_timeout: Duration,
    /// Buffered events above this many bytes are written at once.
    pub max_buffer_bytes: usize,
}

impl Default for RecordingConfig {
    fn default() -> Self {
        Self {
            source: RrwebSource::from_env(),
            output_root: PathBuf::from(RECORDING_DIR),
            flush_interval: Duration::from_secs(5),
            load_timeout: Duration::from_secs(10),
            max_buffer_bytes: 1024 * 1024,
        }
    }
}

/// Why rrweb could not be made ready in a page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LoadFailure {
    /// The script could not be fetched or did not define `rrweb`.
    LoadFailed(String),
    /// It did not arrive in time.
    Timeout,
}

impl LoadFailure {
    /// The message the model sees.
    pub(crate) fn message(&self, source: &RrwebSource, timeout: Duration) -> String {
        let hint = format!(
            "Set {RRWEB_URL_ENV} (or the tool set's `recording_script_url` parameter) to a \
             reachable rrweb URL or a local copy of rrweb.umd.cjs."
        );
        match self {
            LoadFailure::LoadFailed(why) => format!(
                "Error: Unable to start recording. The rrweb library could not be loaded from {} ({why}). {hint}",
                source.describe()
            ),
            LoadFailure::Timeout => format!(
                "Error: Unable to start recording. rrweb did not load from {} within {} seconds. {hint}",
                source.describe(),
                timeout.as_secs_f64()
            ),
        }
    }
}

/// Makes `rrweb` available in `page`, waiting up to `timeout`.
pub(crate) async fn load(
    page: &Page,
    source: &RrwebSource,
    timeout: Duration,
) -> Result<(), LoadFailure> {
    let work = async {
        match source {
            RrwebSource::Url(url) => {
                let wait_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                let expr = LOAD_JS
                    .replace("__RRWEB_URL__", &Value::String(url.clone()).to_string())
                    .replace("__WAIT_MS__", &wait_ms.to_string());
                match eval::<String>(page, &expr).await {
                    Ok(s) if s == "ready" => Ok(()),
                    Ok(s) if s == "timeout" => Err(LoadFailure::Timeout),
                    Ok(_) => Err(LoadFailure::LoadFailed("the request failed".into())),
                    Err(e) => Err(LoadFailure::LoadFailed(e.to_string())),
                }
            }
            RrwebSource::File(path) => {
                let present: bool = eval(
                    page,
                    "!!(window.rrweb && typeof window.rrweb.record === 'function')",
                )
                .await
                .map_err(|e| LoadFailure::LoadFailed(e.to_string()))?;
                if present {
                    return Ok(());
                }
                let source = read_script(path)
                    .await
                    .map_err(|e| LoadFailure::LoadFailed(e.to_string()))?;
                run_script(page, &source)
                    .await
                    .map_err(|e| LoadFailure::LoadFailed(e.to_string()))?;
                let present: bool = eval(
                    page,
                    "!!(window.rrweb && typeof window.rrweb.record === 'function')",
                )
                .await
                .map_err(|e| LoadFailure::LoadFailed(e.to_string()))?;
                if present {
                    Ok(())
                } else {
                    Err(LoadFailure::LoadFailed(
                        "the file does not define rrweb.record".into(),
                    ))
                }
            }
        }
    };
    // The page's own timer answers 'timeout' first; this bounds a page that
    // does not answer at all.
    match tokio::time::timeout(timeout + Duration::from_secs(2), work).await {
        Ok(r) => r,
        Err(_) => Err(LoadFailure::Timeout),
    }
}

async fn read_script(path: &Path) -> Result<String, ScriptError> {
    let unreadable = |source| ScriptError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = tokio::fs::metadata(path).await.map_err(unreadable)?;
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(ScriptError::TooLarge(path.to_path_buf()));
    }
    tokio::fs::read_to_string(path).await.map_err(unreadable)
}

/// Why the recorder's script could not be read.
#[derive(Debug, thiserror::Error)]
enum ScriptError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The script.
        path: std::path::PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
    /// The file is above the size limit.
    #[error("{} is too large", .0.display())]
    TooLarge(std::path::PathBuf),
}

/// What starting the recorder in a page answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Started {
    /// A new recorder runs.
    Started,
    /// One was running already.
    AlreadyRecording,
}

/// Starts rrweb's recorder in `page` (rrweb must be loaded).
pub(crate) async fn start_in_page(page: &Page) -> Result<Started, BrowserError> {
    let status: String = eval(page, START_JS).await?;
    match status.as_str() {
        "started" => Ok(Started::Started),
        "already_recording" => Ok(Started::AlreadyRecording),
        other => Err(BrowserError::Recording(format!(
            "Error: Unable to start recording: rrweb answered '{other}'"
        ))),
    }
}

/// The events `page` collected since the last call (and whether a recorder
/// runs there); `stop` also ends that recorder.
pub(crate) async fn take_events(
    page: &Page,
    stop: bool,
) -> Result<(bool, Vec<Value>, usize), BrowserError> {
    #[derive(serde::Deserialize)]
    struct Taken {
        recording: bool,
        events: Vec<Value>,
    }
    let text = eval_json_text(page, &format!("({TAKE_JS})({stop})")).await?;
    let taken: Taken = serde_json::from_str(&text)
        .map_err(|e| BrowserError::Cdp(format!("unexpected answer from the page: {e}")))?;
    Ok((taken.recording, taken.events, text.len()))
}

/// `%Y%m%d-%H%M%S-%f` in UTC, the reference's timestamp.
fn timestamp() -> String {
    chrono::Utc::now().format("%Y%m%d-%H%M%S-%6f").to_string()
}

/// One recording: its folder, the events not yet written and the counts.
#[derive(Debug)]
pub(crate) struct Recording {
    dir: PathBuf,
    buffer: Vec<Value>,
    buffer_bytes: usize,
    max_buffer_bytes: usize,
    files: usize,
    events: usize,
}

impl Recording {
    /// A recording in a new `recording-<timestamp>` folder under `root`.
    pub(crate) async fn create(root: &Path, max_buffer_bytes: usize) -> std::io::Result<Self> {
        let dir = root.join(format!("recording-{}", timestamp()));
        tokio::fs::create_dir_all(&dir).await?;
        Ok(Self {
            dir,
            buffer: Vec::new(),
            buffer_bytes: 0,
            max_buffer_bytes,
            files: 0,
            events: 0,
        })
    }

    /// The recording's folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Buffers `events` (`bytes` long as JSON); true when the buffer is now
    /// over its limit and should be written.
    pub(crate) fn add(&mut self, events: Vec<Value>, bytes: usize) -> bool {
        if !events.is_empty() {
            self.buffer.extend(events);
            self.buffer_bytes += bytes;
        }
        self.buffer_bytes > self.max_buffer_bytes
    }

    /// Writes the buffered events to a new file (nothing when empty).
    pub(crate) async fn save(&mut self) -> std::io::Result<Option<PathBuf>> {
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let text = serde_json::to_vec(&self.buffer).map_err(std::io::Error::other)?;
        tokio::fs::create_dir_all(&self.dir).await?;
        let mut path = self.dir.join(format!("{}.json", timestamp()));
        let mut n = 1;
        while tokio::fs::try_exists(&path).await.unwrap_or(false) {
            path = self.dir.join(format!("{}-{n}.json", timestamp()));
            n += 1;
        }
        tokio::fs::write(&path, text).await?;
        self.files += 1;
        self.events += self.buffer.len();
        self.buffer.clear();
        self.buffer_bytes = 0;
        Ok(Some(path))
    }

    /// Writes what is buffered, logging (not failing) when it cannot.
    pub(crate) async fn save_logged(&mut self) {
        if let Err(e) = self.save().await {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot save browser recording events");
        }
    }

    /// The reference's closing summary.
    pub(crate) fn summary(&self) -> String {
        format!(
            "Recording stopped. Captured {} events in {} file(s). Saved to: {}",
            self.events,
            self.files,
            self.dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sources_are_urls_or_files() {
        assert_eq!(
            RrwebSource::parse(" https://cdn.example/rrweb.js "),
            RrwebSource::Url("https://cdn.example/rrweb.js".into())
        );
        assert_eq!(
            RrwebSource::parse("file:///opt/rrweb.umd.cjs"),
            RrwebSource::File(PathBuf::from("/opt/rrweb.umd.cjs"))
        );
        assert_eq!(
            RrwebSource::parse("/opt/rrweb.umd.cjs"),
            RrwebSource::File(PathBuf::from("/opt/rrweb.umd.cjs"))
        );
    }

    #[tokio::test]
    async fn events_are_saved_in_the_reference_layout_and_counted() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut rec = Recording::create(root.path(), 100)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let name = rec
            .dir()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        // recording-YYYYmmdd-HHMMSS-ffffff
        assert!(
            name.starts_with("recording-") && name.len() == 10 + 22,
            "{name}"
        );
        assert_eq!(rec.save().await.ok().flatten(), None, "nothing to save");
        assert!(!rec.add(vec![json!({"type": 4})], 40), "under the limit");
        assert!(
            rec.add(vec![json!({"type": 2}), json!({"type": 3})], 80),
            "over the limit"
        );
        let first = rec.save().await.ok().flatten().unwrap_or_default();
        assert!(!rec.add(Vec::new(), 0));
        rec.add(vec![json!({"type": 3})], 10);
        let second = rec.save().await.ok().flatten().unwrap_or_default();
        assert_ne!(first, second);
        let saved: Vec<Value> =
            serde_json::from_slice(&std::fs::read(&first).unwrap_or_default()).unwrap_or_default();
        assert_eq!(saved.len(), 3);
        assert_eq!(saved[1]["type"], 2);
        let file = first
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        assert!(file.ends_with(".json") && file.len() == 22 + 5, "{file}");
        assert_eq!(
            rec.summary(),
            format!(
                "Recording stopped. Captured 4 events in 2 file(s). Saved to: {}",
                rec.dir().display()
            )
        );
    }
}
