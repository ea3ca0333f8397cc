//! What both Theory-of-Mind tools share: where the files are, the model
//! consulted (the one named in the parameters, else the agent's own LLM;
//! its cost counted in the conversation's statistics under `tom`), one
//! model call and reading its JSON answer.

use super::params::TomParams;
use super::store::TomStore;
use openhands_llm::LlmRequest;
use openhands_sdk::llm_switch::LlmSwitch;
use openhands_sdk::profile_llm::ProfileLlms;
use openhands_sdk::tool::ToolEnv;
use openhands_wire::content::Content;
use openhands_wire::message::Message;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Usage id of the model the tools consult.
pub const TOM_USAGE_ID: &str = "tom";

/// The model and files of one conversation's Theory-of-Mind tools.
#[derive(Clone)]
pub struct TomEngine {
    params: TomParams,
    llms: Option<Arc<dyn ProfileLlms>>,
    conversation: Option<Arc<dyn LlmSwitch>>,
}

impl std::fmt::Debug for TomEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TomEngine")
            .field("enable_rag", &self.params.enable_rag)
            .field("persistence_dir", &self.params.persistence_dir)
            .finish_non_exhaustive()
    }
}

/// Finds the JSON object in a model's answer (which may wrap it in a code
/// fence or a sentence).
pub fn json_object_in(text: &str) -> Option<serde_json::Map<String, Value>> {
    let (start, end) = (text.find('{')?, text.rfind('}')?);
    match serde_json::from_str::<Value>(text.get(start..=end)?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

impl TomEngine {
    /// The engine for the conversation of `env`.
    pub fn new(params: TomParams, env: &ToolEnv) -> Self {
        Self {
            params,
            llms: env.profile_llms.clone(),
            conversation: env.llm_switch.clone(),
        }
    }

    /// Whether consultations add excerpts of earlier sessions.
    pub fn enable_rag(&self) -> bool {
        self.params.enable_rag
    }

    /// The files, or why there are none.
    pub fn store(&self) -> Result<TomStore, TomError> {
        self.params
            .persistence_dir
            .clone()
            .or_else(openhands_sdk::paths::user_persistence_dir)
            .map(TomStore::new)
            .ok_or(TomError::NoStore)
    }

    /// The last `limit` messages of the conversation, `<source>: <text>`.
    pub fn recent_messages(&self, limit: usize) -> Vec<String> {
        self.conversation
            .as_ref()
            .map(|c| c.recent_messages(limit))
            .unwrap_or_default()
    }

    /// Sends `system` and `user` to the model and returns its text.
    pub async fn ask(
        &self,
        system: &str,
        user: String,
        cancel: &CancellationToken,
    ) -> Result<String, TomError> {
        let Some(llms) = &self.llms else {
            return Err(TomError::NoConversation);
        };
        let config = match &self.params.llm {
            Some(config) => config.clone(),
            None => llms.agent_llm_config().ok_or(TomError::UnknownLlm)?,
        };
        let llm = llms
            .config_llm(config, TOM_USAGE_ID)
            .map_err(TomError::Unusable)?;
        let request = LlmRequest {
            messages: vec![Message::system(system), Message::user(user)],
            tools: Vec::new(),
            conversation_id: None,
        };
        let result = tokio::select! {
            r = llm.completion(&request, None) => r,
            _ = cancel.cancelled() => return Err(TomError::Interrupted),
        };
        llms.record_usage(&llm);
        let reply = result.map_err(TomError::Model)?;
        Ok(reply
            .message
            .content
            .iter()
            .filter_map(Content::as_text)
            .collect::<String>()
            .trim()
            .to_string())
    }
}

/// Why a Theory-of-Mind tool gave no answer (the observation's text).
#[derive(Debug, thiserror::Error)]
pub enum TomError {
    /// No directory to keep the user model in.
    #[error(
        "no directory for the user model: set OH_PERSISTENCE_DIR or HOME, or give the tool the persistence_dir parameter"
    )]
    NoStore,
    /// Called outside a conversation.
    #[error("the Theory-of-Mind model can only be consulted within a conversation")]
    NoConversation,
    /// No model configured and the agent's is unknown.
    #[error("the agent's LLM is unknown; give the tool llm_model")]
    UnknownLlm,
    /// The configured model cannot be built.
    #[error("the Theory-of-Mind model cannot be used: {0}")]
    Unusable(#[source] openhands_sdk::profile_llm::ProfileLlmError),
    /// The model call failed.
    #[error("the Theory-of-Mind model failed: {0}")]
    Model(#[source] openhands_llm::LlmError),
    /// The call was cancelled.
    #[error("interrupted")]
    Interrupted,
    /// The user-model files could not be read or written.
    #[error("{0}")]
    Store(#[from] std::io::Error),
    /// A blocking file task did not finish.
    #[error("{0}")]
    Worker(#[from] tokio::task::JoinError),
    /// Consulting for the user's message when there is none.
    #[error("the conversation has no user message yet")]
    NoUserMessage,
    /// Consulting with an empty custom query.
    #[error("custom_query is empty while use_user_message is false")]
    EmptyQuery,
    /// The model's answer suggests nothing.
    #[error("the model gave no suggestions")]
    NoSuggestions,
    /// The model's answer holds no JSON object.
    #[error("the model did not answer with a JSON object")]
    NotJson,
    /// The model's answer lacks a list the profile needs.
    #[error("the model's answer has no {0} list")]
    MissingList(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_object_is_found_inside_a_fence() {
        let m = json_object_in("Sure:\n```json\n{\"a\": 1}\n```");
        assert_eq!(m.and_then(|m| m.get("a").cloned()), Some(Value::from(1)));
        assert!(json_object_in("no json here").is_none());
        assert!(json_object_in("[1, 2]").is_none());
    }
}
