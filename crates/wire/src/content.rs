//! Message content parts: text and images.

use serde::{Deserialize, Serialize};

/// The `type` tag of a text part (always `"text"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TextTag {
    /// `"text"`
    #[default]
    #[serde(rename = "text")]
    Text,
}

/// The `type` tag of an image part (always `"image"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ImageTag {
    /// `"image"`
    #[default]
    #[serde(rename = "image")]
    Image,
}

/// A text part (`{"cache_prompt":false,"type":"text","text":...}`).
/// `cache_prompt` marks the part as a prompt-caching breakpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// Whether a prompt-cache marker goes on this part.
    #[serde(default)]
    pub cache_prompt: bool,
    /// Always `"text"`.
    #[serde(rename = "type", default)]
    pub tag: TextTag,
    /// The text.
    pub text: String,
}

impl TextContent {
    /// A text part without cache marker.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            cache_prompt: false,
            tag: TextTag::Text,
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
    /// Always `"image"`.
    #[serde(rename = "type")]
    pub tag: ImageTag,
    /// The image URLs.
    pub image_urls: Vec<String>,
}

/// One content part, discriminated by `type` (`text` | `image`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// `{"type":"text", ...}`
    Text(TextContent),
    /// `{"type":"image", ...}`
    Image(ImageContent),
}

impl ImageContent {
    /// An image part with the given URLs.
    pub fn new(image_urls: Vec<String>) -> Self {
        Self {
            cache_prompt: false,
            tag: ImageTag::Image,
            image_urls,
        }
    }
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
