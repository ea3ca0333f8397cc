//! The models a session reports (the `model` select of `configOptions`, or
//! the older `models` block), in the reference's stable shapes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model an ACP server offers (`ACPModelInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpModelInfo {
    /// The id to pass back to select it.
    pub model_id: String,
    /// Display label.
    #[serde(default)]
    pub name: Option<String>,
    /// Longer description.
    #[serde(default)]
    pub description: Option<String>,
}

/// The model state of a session response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionModels {
    /// The active model the server reported.
    pub current_model_id: Option<String>,
    /// `None`: the server reported no model mechanism; `Some([])`: it did,
    /// without usable models.
    pub available_models: Option<Vec<AcpModelInfo>>,
    /// Whether models are selected through `session/set_config_option`
    /// (`configId: "model"`) rather than `session/set_model`.
    pub via_config_option: bool,
}

/// Reads the model state of a `session/new` or `session/load` result.
pub fn extract_session_models(response: &Value, default_via_config_option: bool) -> SessionModels {
    let options = response.get("configOptions").and_then(Value::as_array);
    if let Some(opt) = options.into_iter().flatten().find(|o| {
        o.get("type").and_then(Value::as_str) == Some("select")
            && o.get("id").and_then(Value::as_str) == Some("model")
    }) {
        let current = non_empty(opt.get("currentValue"));
        let models = opt
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| info(o, "value"))
            .collect();
        return SessionModels {
            current_model_id: current,
            available_models: Some(models),
            via_config_option: true,
        };
    }
    if let Some(block) = response.get("models").filter(|m| m.is_object()) {
        let models = block
            .get("availableModels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| info(o, "modelId"))
            .collect();
        return SessionModels {
            current_model_id: non_empty(block.get("currentModelId")),
            available_models: Some(models),
            via_config_option: false,
        };
    }
    SessionModels {
        current_model_id: None,
        available_models: None,
        via_config_option: default_via_config_option,
    }
}

fn non_empty(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn info(raw: &Value, id_key: &str) -> Option<AcpModelInfo> {
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
    let model_id = text(id_key).filter(|s| !s.is_empty())?;
    Some(AcpModelInfo {
        model_id,
        name: text("name"),
        description: text("description"),
    })
}

/// Why a server could not report its models (`ACPModelDiscoveryError`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpModelDiscoveryError {
    /// `ACPAuthRequired`, `ACPStartupTimeout`, `ACPSpawnError` or `ACPInitError`.
    pub code: String,
    /// Readable, secret-free cause.
    pub detail: String,
}

/// What a server reports for a fresh session (`ACPModelDiscovery`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpModelDiscovery {
    /// Server name from `initialize`.
    pub agent_name: Option<String>,
    /// Server version from `initialize`.
    pub agent_version: Option<String>,
    /// The server's default model.
    pub current_model_id: Option<String>,
    /// Models it offers.
    pub available_models: Vec<AcpModelInfo>,
    /// Whether a conversation can switch among them live.
    pub supports_runtime_model_switch: bool,
    /// Set when no session could be started.
    pub error: Option<AcpModelDiscoveryError>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_option_select_wins_over_the_models_block() {
        let r = json!({
            "configOptions": [{"type": "select", "id": "model", "currentValue": "b",
                "options": [{"value": "a", "name": "A"}, {"value": "", "name": "bad"}, {"value": "b"}]}],
            "models": {"currentModelId": "x", "availableModels": []}
        });
        let m = extract_session_models(&r, false);
        assert!(m.via_config_option);
        assert_eq!(m.current_model_id.as_deref(), Some("b"));
        let ids: Vec<_> = m
            .available_models
            .unwrap()
            .into_iter()
            .map(|i| i.model_id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn models_block_and_absence() {
        let r = json!({"models": {"currentModelId": "m1",
            "availableModels": [{"modelId": "m1", "name": "One", "description": "d"}]}});
        let m = extract_session_models(&r, true);
        assert!(!m.via_config_option);
        assert_eq!(
            m.available_models.unwrap()[0].description.as_deref(),
            Some("d")
        );
        let none = extract_session_models(&json!({"sessionId": "s"}), true);
        assert_eq!(none.available_models, None);
        assert!(none.via_config_option);
    }
}
