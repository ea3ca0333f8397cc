//! `BrowserObservation`: the answer text, and a screenshot shown to the
//! model as an image.

use base64::Engine;
use openhands_sdk::mcp::ERROR_HEADER;
use openhands_wire::content::{Content, ImageContent};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What every browser tool returns (the reference's `BrowserObservation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserObservation {
    /// The answer text.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the action failed.
    #[serde(default)]
    pub is_error: bool,
    /// A base64 screenshot, when one was taken.
    #[serde(default)]
    pub screenshot_data: Option<String>,
    /// Where screenshots (and long outputs) of the conversation are saved.
    #[serde(default)]
    pub full_output_save_dir: Option<String>,
}

impl BrowserObservation {
    /// An observation showing `text`.
    pub fn new(
        text: String,
        is_error: bool,
        screenshot_data: Option<String>,
        full_output_save_dir: Option<String>,
    ) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error,
            screenshot_data,
            full_output_save_dir,
        }
    }

    /// The text of the observation.
    pub fn text(&self) -> String {
        Content::join_text(&self.content)
    }

    /// What the model sees: an error header when the action failed, the
    /// text, where the screenshot was saved, and the screenshot itself.
    pub fn to_llm_content(&self) -> Vec<Content> {
        let mut out = Vec::new();
        if self.is_error {
            out.push(Content::text(ERROR_HEADER));
        }
        let text = self.text();
        if !text.is_empty() {
            out.push(Content::text(text));
        }
        if let Some(shot) = &self.screenshot_data {
            if let Some(dir) = &self.full_output_save_dir {
                let path = screenshot_path(shot, Path::new(dir));
                if path.is_file() {
                    out.push(Content::text(format!(
                        "Screenshot saved to: {}",
                        path.display()
                    )));
                }
            }
            out.push(Content::Image(ImageContent::new(vec![format!(
                "data:{};base64,{shot}",
                image_mime(shot)
            )])));
        }
        out
    }
}

/// The image type of base64 data, from its first bytes (PNG when unknown).
pub fn image_mime(base64_data: &str) -> &'static str {
    if base64_data.starts_with("/9j/") {
        "image/jpeg"
    } else if base64_data.starts_with("R0lGODlh") {
        "image/gif"
    } else if base64_data.starts_with("UklGR") {
        "image/webp"
    } else {
        "image/png"
    }
}

/// Where a screenshot is saved in `dir`: named by a hash of its data.
pub fn screenshot_path(base64_data: &str, dir: &Path) -> PathBuf {
    let digest = Sha256::digest(base64_data.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let ext = match image_mime(base64_data) {
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "png",
    };
    dir.join(format!("browser_screenshot_{hash}.{ext}"))
}

/// Writes the screenshot into `dir` (once per distinct image); failures are
/// logged, the observation still carries the image.
pub async fn save_screenshot(base64_data: &str, dir: &Path) {
    let path = screenshot_path(base64_data, dir);
    if path.is_file() {
        return;
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(base64_data) else {
        tracing::warn!("screenshot is not valid base64; not saved");
        return;
    };
    let written = async {
        tokio::fs::create_dir_all(dir).await?;
        tokio::fs::write(&path, bytes).await
    }
    .await;
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot save the screenshot");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_get_the_header_and_screenshots_become_images() {
        let o = BrowserObservation::new("boom".into(), true, None, None);
        let c = o.to_llm_content();
        assert_eq!(c[0].as_text(), Some(ERROR_HEADER));
        assert_eq!(c[1].as_text(), Some("boom"));
        let o = BrowserObservation::new("{}".into(), false, Some("iVBORw0KGgoAAA".into()), None);
        let c = o.to_llm_content();
        assert_eq!(c.len(), 2);
        match &c[1] {
            Content::Image(i) => {
                assert_eq!(i.image_urls, vec!["data:image/png;base64,iVBORw0KGgoAAA"])
            }
            Content::Text(_) => panic!("expected an image"),
        }
    }

    #[tokio::test]
    async fn screenshots_are_saved_once_under_a_hash_name() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        save_screenshot(&data, dir.path()).await;
        let path = screenshot_path(&data, dir.path());
        assert!(path.is_file());
        assert!(
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("browser_screenshot_"))
        );
        let o = BrowserObservation::new(
            "x".into(),
            false,
            Some(data),
            Some(dir.path().display().to_string()),
        );
        let texts: Vec<String> = o
            .to_llm_content()
            .iter()
            .filter_map(|c| c.as_text().map(str::to_string))
            .collect();
        assert!(
            texts.iter().any(|t| t.starts_with("Screenshot saved to: ")),
            "{texts:?}"
        );
    }
}
