//! The conversation as the owner of its tools' profile LLMs
//! ([`crate::profile_llm::StoreProfileLlms`]): recorded usage, statistics,
//! the user's latest images.

use super::local::{Inner, LocalConversation};
use crate::profile_llm::ProfileOwner;
use openhands_wire::content::Content;
use openhands_wire::event::{EventBody, SourceType};
use openhands_wire::message::Role;
use openhands_wire::metrics::Metrics;
use std::sync::Arc;

impl ProfileOwner for Inner {
    fn recorded_usage(self: Arc<Self>, usage_id: &str) -> Option<Metrics> {
        LocalConversation { inner: self }
            .stats()
            .usage_to_metrics
            .get(usage_id)
            .cloned()
    }

    fn record_usage(self: Arc<Self>, usage_id: String, metrics: Metrics) -> Result<(), String> {
        LocalConversation { inner: self }
            .record_usage(usage_id, metrics)
            .map_err(|e| e.to_string())
    }

    fn latest_user_image_urls(self: Arc<Self>) -> Vec<String> {
        LocalConversation { inner: self }.with_branch(|events| {
            events
                .iter()
                .rev()
                .filter_map(|e| match &e.body {
                    EventBody::Message(m)
                        if e.source == SourceType::User && m.llm_message.role == Role::User =>
                    {
                        Some(image_urls(&m.llm_message.content))
                    }
                    _ => None,
                })
                .find(|urls| !urls.is_empty())
                .unwrap_or_default()
        })
    }
}

fn image_urls(content: &[Content]) -> Vec<String> {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Image(i) => Some(i.image_urls.iter().cloned()),
            Content::Text(_) => None,
        })
        .flatten()
        .collect()
}

impl LocalConversation {
    /// The last `limit` messages of the active branch (`MessageEvent`s
    /// with text, whoever sent them), each as `<source>: <text>`, oldest
    /// first: what a classifier reads to tell the task. Images count as
    /// `[Image: <n> URLs]`.
    pub fn recent_messages(&self, limit: usize) -> Vec<String> {
        let mut out: Vec<String> = self.with_branch(|events| {
            events
                .iter()
                .filter_map(|e| match &e.body {
                    EventBody::Message(m) => {
                        let text = m
                            .llm_message
                            .content
                            .iter()
                            .map(|c| match c {
                                Content::Text(t) => t.text.clone(),
                                Content::Image(i) => {
                                    format!("[Image: {} URLs]", i.image_urls.len())
                                }
                            })
                            .collect::<Vec<_>>()
                            .join("\n");
                        let text = text.trim();
                        (!text.is_empty()).then(|| format!("{}: {text}", e.source.as_str()))
                    }
                    _ => None,
                })
                .collect()
        });
        let skip = out.len().saturating_sub(limit);
        out.drain(..skip);
        out
    }
}
