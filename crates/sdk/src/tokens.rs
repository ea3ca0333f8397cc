//! Token counting where the reference counts tokens (the condenser's
//! `max_tokens` and the agent model's context window): a real BPE
//! tokenizer (tiktoken-rs, whose vocabularies are compiled in, so it works
//! offline) chosen by model, with the character estimate as the fallback
//! for models no tokenizer is known for.
//!
//! OpenAI models get their own encoding (`o200k_base` for GPT-4o/4.1/5 and
//! the o-series, `cl100k_base` for GPT-4/3.5); other well-known model
//! families get `cl100k_base`, which is what the reference's counter
//! (LiteLLM's `token_counter`) uses for them; anything else is estimated
//! at four characters per token. Counts of one event are cached by event
//! id (events never change once written).

use std::collections::HashMap;
use std::sync::LazyLock;

use openhands_wire::event::{Event, EventBody};
use parking_lot::Mutex;
use tiktoken_rs::CoreBPE;

/// Characters per estimated token (the fallback).
const CHARS_PER_TOKEN: usize = 4;
/// Tokens a chat message costs beyond its text (role and separators), as
/// the reference's counter adds for OpenAI-style messages.
const TOKENS_PER_MESSAGE: usize = 3;
/// Overhead of one message in the estimate.
const ESTIMATE_OVERHEAD: usize = 4;
/// Cached event counts kept before the cache is emptied.
const CACHE_LIMIT: usize = 200_000;

/// Model families the reference counts with `cl100k_base`.
const CL100K_FAMILIES: &[&str] = &[
    "claude",
    "gemini",
    "gemma",
    "mistral",
    "mixtral",
    "codestral",
    "devstral",
    "magistral",
    "deepseek",
    "qwen",
    "qwq",
    "llama",
    "grok",
    "kimi",
    "moonshot",
    "glm",
    "minimax",
    "command",
    "phi",
    "nova",
    "jamba",
    "sonar",
    "yi-",
    "openhands-lm",
    "gpt-",
];

/// How tokens are counted for one model.
#[derive(Clone, Copy)]
pub enum TokenCounter {
    /// A BPE vocabulary (name, tokenizer).
    Bpe(&'static str, &'static CoreBPE),
    /// Four characters per token (no tokenizer known for the model).
    Estimate,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl TokenCounter {
    /// The counter for `model` (a LiteLLM-style name, provider prefix
    /// allowed: `openai/gpt-4o`, `anthropic/claude-sonnet-4`).
    pub fn for_model(model: &str) -> Self {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        if let Some(t) = tiktoken_rs::tokenizer::get_tokenizer(&name) {
            use tiktoken_rs::tokenizer::Tokenizer;
            return match t {
                Tokenizer::O200kBase | Tokenizer::O200kHarmony => {
                    TokenCounter::Bpe("o200k_base", tiktoken_rs::o200k_base_singleton())
                }
                _ => TokenCounter::Bpe("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
            };
        }
        if CL100K_FAMILIES.iter().any(|f| name.starts_with(f)) {
            return TokenCounter::Bpe("cl100k_base", tiktoken_rs::cl100k_base_singleton());
        }
        TokenCounter::Estimate
    }

    /// The vocabulary's name, or `estimate`.
    pub fn name(&self) -> &'static str {
        match self {
            TokenCounter::Bpe(name, _) => name,
            TokenCounter::Estimate => "estimate",
        }
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenCounter::Bpe(_, bpe) => bpe.encode_ordinary(text).len(),
            TokenCounter::Estimate => text.len() / CHARS_PER_TOKEN,
        }
    }

    /// Tokens of one event as the model sees it (its text plus the
    /// per-message overhead); 0 for events the model does not see.
    pub fn event_tokens(&self, e: &Event) -> usize {
        match self {
            TokenCounter::Estimate => estimate_event_tokens(e),
            TokenCounter::Bpe(name, _) => {
                let Some(text) = model_text(e) else {
                    return 0;
                };
                let key = (e.id.clone(), *name);
                if let Some(n) = CACHE.lock().get(&key) {
                    return *n;
                }
                let n = self.count(&text) + TOKENS_PER_MESSAGE;
                let mut cache = CACHE.lock();
                if cache.len() >= CACHE_LIMIT {
                    cache.clear();
                }
                cache.insert(key, n);
                n
            }
        }
    }
}

/// The estimate of one event: four characters per token of what the
/// model sees, plus a small overhead.
pub fn estimate_event_tokens(e: &Event) -> usize {
    let chars = match &e.body {
        EventBody::SystemPrompt(s) => {
            s.system_prompt.text.len()
                + s.tools
                    .iter()
                    .map(|t| serde_json::to_string(t).map_or(0, |j| j.len()))
                    .sum::<usize>()
        }
        EventBody::Message(m) => m.llm_message.text().len(),
        EventBody::Action(a) => {
            a.tool_call.arguments.len()
                + a.thought.iter().map(|t| t.text.len()).sum::<usize>()
                + a.reasoning_content.as_ref().map_or(0, String::len)
        }
        EventBody::Observation(o) => o.observation.to_string().len(),
        EventBody::AgentError(a) => a.error.len(),
        EventBody::UserReject(r) => r.rejection_reason.len(),
        EventBody::CondensationSummary(s) => s.summary.len(),
        _ => 0,
    };
    chars / CHARS_PER_TOKEN + ESTIMATE_OVERHEAD
}

static CACHE: LazyLock<Mutex<HashMap<(String, &'static str), usize>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The text of an event the model sees (tool schemas included for the
/// system prompt), or `None` for events it does not see.
fn model_text(e: &Event) -> Option<String> {
    Some(match &e.body {
        EventBody::SystemPrompt(s) => {
            let mut text = s.system_prompt.text.clone();
            if let Some(d) = &s.dynamic_context {
                text.push_str(&d.text);
            }
            for t in &s.tools {
                if let Ok(j) = serde_json::to_string(t) {
                    text.push_str(&j);
                }
            }
            text
        }
        EventBody::Message(m) => {
            let mut text = m.llm_message.text();
            for c in &m.extended_content {
                text.push_str(&c.text);
            }
            text
        }
        EventBody::Action(a) => {
            let mut text: String = a.thought.iter().map(|t| t.text.as_str()).collect();
            text.push_str(&a.tool_call.name);
            text.push_str(&a.tool_call.arguments);
            if let Some(r) = &a.reasoning_content {
                text.push_str(r);
            }
            text
        }
        EventBody::Observation(o) => {
            let mut text = openhands_wire::content::Content::join_text(
                &crate::tool::default_observation_content(&o.observation),
            );
            if text.is_empty() {
                text = o.observation.to_string();
            }
            text
        }
        EventBody::AgentError(a) => a.error.clone(),
        EventBody::UserReject(r) => r.rejection_reason.clone(),
        EventBody::CondensationSummary(s) => s.summary.clone(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_get_their_vocabulary_and_unknown_ones_the_estimate() {
        assert_eq!(
            TokenCounter::for_model("openai/gpt-4o").name(),
            "o200k_base"
        );
        assert_eq!(TokenCounter::for_model("gpt-5-mini").name(), "o200k_base");
        assert_eq!(TokenCounter::for_model("gpt-4").name(), "cl100k_base");
        assert_eq!(
            TokenCounter::for_model("anthropic/claude-sonnet-4-5").name(),
            "cl100k_base"
        );
        assert_eq!(
            TokenCounter::for_model("openai/mock-model").name(),
            "estimate"
        );
    }

    #[test]
    fn real_tokenizers_count_tokens_not_characters() {
        let bpe = TokenCounter::for_model("gpt-4");
        // Known cl100k_base counts.
        assert_eq!(bpe.count("hello world"), 2);
        assert_eq!(bpe.count("tiktoken is great!"), 6);
        // A long run of one character is few tokens, unlike the estimate.
        let run = "a".repeat(4000);
        assert!(bpe.count(&run) < 1000, "{}", bpe.count(&run));
        assert_eq!(TokenCounter::Estimate.count(&run), 1000);
    }

    #[test]
    fn event_counts_are_cached_and_include_message_overhead() {
        use openhands_wire::event::{AgentErrorEvent, Event, EventBody};
        let e = Event::new(EventBody::AgentError(AgentErrorEvent {
            tool_name: "t".into(),
            tool_call_id: "c".into(),
            error: "hello world".into(),
            classification: None,
        }));
        let bpe = TokenCounter::for_model("gpt-4");
        assert_eq!(bpe.event_tokens(&e), 2 + TOKENS_PER_MESSAGE);
        assert_eq!(bpe.event_tokens(&e), 2 + TOKENS_PER_MESSAGE);
        assert_eq!(
            TokenCounter::Estimate.event_tokens(&e),
            11 / 4 + ESTIMATE_OVERHEAD
        );
        let unseen = Event::new(EventBody::CondensationRequest);
        assert_eq!(bpe.event_tokens(&unseen), 0);
    }
}
