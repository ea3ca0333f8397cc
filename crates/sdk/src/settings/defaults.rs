//! The defaults of every settings field, as the reference 1.58.2 writes
//! them for fresh settings (`defaults.json`: the persisted document;
//! `acp_defaults.json`: the agent settings of `agent_kind: "acp"`).

use serde_json::{Map, Value};

/// `schema_version` of the settings document.
pub const DOCUMENT_SCHEMA_VERSION: u64 = 6;
/// `agent_settings.schema_version`.
pub const AGENT_SCHEMA_VERSION: u64 = 9;
/// `conversation_settings.schema_version`.
pub const CONVERSATION_SCHEMA_VERSION: u64 = 1;

fn parse(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => m,
        // Embedded at build time and checked by the tests below.
        _ => Map::new(),
    }
}

fn section(doc: &Map<String, Value>, key: &str) -> Map<String, Value> {
    match doc.get(key) {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    }
}

/// The whole default document (without `current_datetime`, which is the
/// time the settings are first built).
pub fn document() -> Map<String, Value> {
    parse(include_str!("defaults.json"))
}

/// Default OpenHands agent settings.
pub fn openhands_agent() -> Map<String, Value> {
    section(&document(), "agent_settings")
}

/// Default ACP agent settings.
pub fn acp_agent() -> Map<String, Value> {
    parse(include_str!("acp_defaults.json"))
}

/// Default conversation settings.
pub fn conversation() -> Map<String, Value> {
    section(&document(), "conversation_settings")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_defaults_parse_with_their_versions() {
        let doc = document();
        assert_eq!(doc["schema_version"], DOCUMENT_SCHEMA_VERSION);
        assert_eq!(openhands_agent()["schema_version"], AGENT_SCHEMA_VERSION);
        assert_eq!(openhands_agent()["agent_kind"], "openhands");
        assert_eq!(acp_agent()["agent_kind"], "acp");
        assert_eq!(
            conversation()["schema_version"],
            CONVERSATION_SCHEMA_VERSION
        );
        assert_eq!(conversation()["max_iterations"], 500);
    }
}
