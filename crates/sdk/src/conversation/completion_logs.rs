//! `log_completions` records as events: with
//! [`super::ListenerOptions::completion_logs_as_events`] each record of the
//! conversation's LLMs is appended as an `LLMCompletionLogEvent` (persisted
//! and announced to the listeners, stamped when it is appended) instead of
//! a file written into the LLM's `log_completions_folder`.

use super::local::{Inner, LocalConversation};
use openhands_llm::completion_log::{CompletionLog, CompletionLogSink};
use openhands_wire::event::{Event, EventBody, LlmCompletionLogEvent};
use std::sync::{Arc, Weak};

impl LocalConversation {
    /// The sink the conversation's LLMs hand their records to (a weak link:
    /// the LLMs live in the conversation). The event is appended on the
    /// commit threads, never on the LLM call's async worker.
    pub(crate) fn completion_log_sink(inner: &Weak<Inner>) -> CompletionLogSink {
        let inner = inner.clone();
        Arc::new(move |log: CompletionLog| {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let conversation = LocalConversation { inner };
            let body = EventBody::LlmCompletionLog(LlmCompletionLogEvent {
                filename: log.filename,
                log_data: log.log_data,
                model_name: log.model_name,
                usage_id: log.usage_id,
            });
            let append = move |_: &mut super::core::Change<'_>| vec![Event::new(body)];
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(async move {
                        if let Err(e) = conversation.commit_async(false, append).await {
                            tracing::warn!(error = %e, "cannot record a completion log");
                        }
                    });
                }
                // No runtime: this thread may block on the commit.
                Err(_) => {
                    if let Err(e) = conversation.commit(false, append) {
                        tracing::warn!(error = %e, "cannot record a completion log");
                    }
                }
            }
        })
    }
}
