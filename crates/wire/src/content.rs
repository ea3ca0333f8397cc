//! Message content parts: text and images.

use serde::{Deserialize, Serialize};

/// A text part. `cache_prompt` marks the part as a prompt-caching breakpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// Whether a prompt-cache marker goes on this part.
    #[serde(default)]
    pub cache_prompt: bool,
    /// The text.
    pub text: String,
}

impl TextContent {
    /// A text part without cache marker.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            cache_prompt: false,
            text: text.into(),
        }
    }
}

/// An image part: one or more URLs (http(s) or `data:` URLs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// Whether a prompt-cache marker goes on this part.
    #[serde(default)]
    pub cache_prompt: bool,
    /// The image URLs.
    pub image_urls: Vec<String>,
}

/// One content part, discriminated by `type` (`text` | `image`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Content {
    /// `{"type":"text", ...}`
    #[serde(rename = "text")]
    Text(TextContent),
    /// `{"type":"image", ...}`
    #[serde(rename = "image")]
    Image(ImageContent),
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent::new(text))
    }

    /// The text of a text part, `None` for images.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            Content::Image(_) => None,
        }
    }

    /// Sets or clears the prompt-cache marker.
    pub fn set_cache_prompt(&mut self, on: bool) {
        match self {
            Content::Text(t) => t.cache_prompt = on,
            Content::Image(i) => i.cache_prompt = on,
        }
    }
}

impl Content {
    /// The concatenated text of every text part, separated by newlines.
    pub fn join_text(parts: &[Content]) -> String {
        let mut out = String::new();
        for p in parts {
            if let Some(t) = p.as_text() {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips() {
        let j = r#"{"cache_prompt":false,"type":"text","text":"hi"}"#;
        let c: Content = serde_json::from_str(j).unwrap();
        assert_eq!(c.as_text(), Some("hi"));
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(j).unwrap());
        let img: Content =
            serde_json::from_str(r#"{"type":"image","image_urls":["data:x"]}"#).unwrap();
        assert!(matches!(img, Content::Image(_)));
        assert!(serde_json::from_str::<Content>(r#"{"type":"video"}"#).is_err());
    }
}
