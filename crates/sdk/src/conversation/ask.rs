//! Side calls to the model that record nothing: a question about the
//! conversation (`ask_agent`) and a title from the first user message.

use super::error::ConversationError;
use super::local::LocalConversation;
use openhands_wire::event::EventBody;
use openhands_wire::message::{Message, Role};

impl LocalConversation {
    /// Asks the agent a side question: one LLM call over the current
    /// history; nothing is recorded and no tool runs. An ACP agent answers
    /// in a fork of its session (see `acp_ask`).
    pub async fn ask_agent(&self, question: &str) -> Result<String, ConversationError> {
        if self.is_acp() {
            return self.acp_ask(question).await;
        }
        self.start_mcp().await?;
        let rt = self.runtime()?;
        let mut messages = self.llm_messages(&rt);
        messages.push(Message::user(question));
        let llm = self.inner.agent.llm();
        // The tools are offered (as the reference does) so the model sees the
        // same context; any tool call it makes is not executed.
        let req = openhands_llm::LlmRequest {
            messages,
            tools: rt.schemas().to_vec(),
            conversation_id: Some(self.id().to_string()),
        };
        let resp = llm.completion(&req, None).await?;
        Ok(resp.message.text())
    }

    /// Generates a short title (≤ `max_len` characters) from the first user
    /// message with a tool-less LLM call; falls back to the message itself.
    pub async fn generate_title(&self, max_len: usize) -> Result<String, ConversationError> {
        self.generate_title_with(max_len, None, None).await
    }

    /// [`LocalConversation::generate_title`] with a custom user prompt (its
    /// `{conversation_content}` and `{max_length}` placeholders are filled;
    /// without the first, the message is appended) and another LLM than the
    /// agent's (a title profile).
    pub async fn generate_title_with(
        &self,
        max_len: usize,
        prompt: Option<&str>,
        llm: Option<openhands_llm::Llm>,
    ) -> Result<String, ConversationError> {
        let first = self.with_events(|events| {
            events.iter().find_map(|e| match &e.body {
                EventBody::Message(m) if m.llm_message.role == Role::User => {
                    Some(m.llm_message.text())
                }
                _ => None,
            })
        });
        let Some(first) = first else {
            return Err(ConversationError::Invalid(
                "no user message to generate a title from".into(),
            ));
        };
        let llm = llm.unwrap_or_else(|| self.inner.agent.llm());
        let message = truncate_chars(&first, 2000);
        let user = match prompt.map(str::trim).filter(|p| !p.is_empty()) {
            Some(template) => title_prompt(template, &message, max_len),
            None => message,
        };
        let req = openhands_llm::LlmRequest {
            messages: vec![
                Message::system(format!(
                    "Write a concise title (at most {max_len} characters, no quotes) for a \
                     conversation that starts with the user's message. Answer with the title only."
                )),
                Message::user(user),
            ],
            tools: Vec::new(),
            conversation_id: Some(self.id().to_string()),
        };
        let title = match llm.completion(&req, None).await {
            Ok(r) => r.message.text().trim().trim_matches('"').to_string(),
            Err(e) => {
                tracing::debug!(error = %e, "title generation failed; using the message");
                String::new()
            }
        };
        let title = if title.is_empty() { first } else { title };
        let one_line = title.lines().next().unwrap_or_default().trim().to_string();
        Ok(truncate_chars(&one_line, max_len))
    }
}

/// A custom title prompt with its placeholders filled, as the reference
/// fills them: `{conversation_content}` (appended when absent) and
/// `{max_length}`.
fn title_prompt(template: &str, message: &str, max_len: usize) -> String {
    const CONTENT: &str = "{conversation_content}";
    let filled = template
        .replace(CONTENT, message)
        .replace("{max_length}", &max_len.to_string());
    if template.contains(CONTENT) {
        filled
    } else {
        format!("{filled}\n\nConversation content:\n{message}")
    }
}

/// The first `max` characters of `s`.
fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}
