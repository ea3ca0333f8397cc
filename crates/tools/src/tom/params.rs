//! The parameters both Theory-of-Mind tools take in an agent's tool spec:
//! the reference's `enable_rag`, `llm_model`, `api_key` and `api_base`,
//! and `persistence_dir` (ours: the base directory instead of
//! `$OH_PERSISTENCE_DIR` or `~/.openhands`). Anything else is refused,
//! naming the parameter.

use openhands_sdk::tool::ToolError;
use openhands_wire::LlmConfig;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The parameters of one Theory-of-Mind tool.
#[derive(Debug, Clone)]
pub struct TomParams {
    /// Whether consultations add excerpts of earlier sessions (BM25).
    pub enable_rag: bool,
    /// The model consulted; `None`: the agent's own LLM.
    pub llm: Option<LlmConfig>,
    /// The base directory; `None`: the user persistence directory.
    pub persistence_dir: Option<PathBuf>,
}

fn string(params: &Map<String, Value>, name: &str) -> Result<Option<String>, ToolError> {
    match params.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ToolError::InvalidArguments(format!(
            "{name} must be a string, got {other}"
        ))),
    }
}

impl TomParams {
    /// Parses the tool spec's `params`.
    pub fn parse(params: &Map<String, Value>) -> Result<Self, ToolError> {
        const KNOWN: [&str; 5] = [
            "enable_rag",
            "llm_model",
            "api_key",
            "api_base",
            "persistence_dir",
        ];
        if let Some(unknown) = params.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ToolError::InvalidArguments(format!(
                "unknown parameter '{unknown}' of the Theory-of-Mind tools (known: {})",
                KNOWN.join(", ")
            )));
        }
        let enable_rag = match params.get("enable_rag") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "enable_rag must be a boolean, got {other}"
                )));
            }
        };
        let (model, api_key, api_base) = (
            string(params, "llm_model")?,
            string(params, "api_key")?,
            string(params, "api_base")?,
        );
        let llm = match model {
            Some(model) => {
                let mut config = LlmConfig::new(model);
                config.api_key = api_key.map(Into::into);
                config.base_url = api_base;
                Some(config)
            }
            None => {
                // Without a model the agent's LLM answers, with its own key
                // and URL: a key or URL given here would go unused.
                for (name, value) in [("api_key", &api_key), ("api_base", &api_base)] {
                    if value.is_some() {
                        return Err(ToolError::InvalidArguments(format!(
                            "{name} is given without llm_model: name the model it belongs \
                             to, or leave both out to consult the agent's own LLM"
                        )));
                    }
                }
                None
            }
        };
        let persistence_dir = string(params, "persistence_dir")?.map(PathBuf::from);
        if let Some(dir) = &persistence_dir
            && !dir.is_absolute()
        {
            return Err(ToolError::InvalidArguments(format!(
                "persistence_dir must be an absolute path, got {}",
                dir.display()
            )));
        }
        Ok(Self {
            enable_rag,
            llm,
            persistence_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<TomParams, ToolError> {
        TomParams::parse(v.as_object().unwrap_or(&Map::new()))
    }

    #[test]
    fn defaults_and_reference_parameters() {
        let p = parse(json!({})).map_err(|e| e.to_string());
        let p = p.as_ref().map(|p| (p.enable_rag, p.llm.is_none()));
        assert_eq!(p, Ok((true, true)));
        let p = parse(json!({"enable_rag": false, "llm_model": "openai/gpt-4o",
            "api_key": "k", "api_base": "http://x"}));
        let Ok(p) = p else { panic!("refused") };
        assert!(!p.enable_rag);
        let llm = p.llm.unwrap_or_else(|| LlmConfig::new("none"));
        assert_eq!(llm.model, "openai/gpt-4o");
        assert_eq!(llm.base_url.as_deref(), Some("http://x"));
    }

    #[test]
    fn refusals_name_the_parameter() {
        for (v, name) in [
            (json!({"user_id": "u"}), "user_id"),
            (json!({"api_key": "k"}), "api_key"),
            (json!({"enable_rag": "yes"}), "enable_rag"),
            (json!({"persistence_dir": "rel"}), "persistence_dir"),
        ] {
            let Err(e) = parse(v) else {
                panic!("{name} accepted")
            };
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
