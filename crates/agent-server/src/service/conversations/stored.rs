//! `meta.json`: the server's record of a conversation (`StoredConversation`
//! in the reference) — the creation settings plus title, tags, timestamps
//! and fork provenance. The agent and the mutable state live in the SDK's
//! `base_state.json`, never here.

use chrono::{DateTime, Utc};
use openhands_sdk::fsutil::{Durability, write_atomic};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::path::Path;
use uuid::Uuid;

/// File name of the metadata inside a conversation directory.
pub const META_FILE: &str = "meta.json";

fn d_true() -> bool {
    true
}
fn d_max_iterations() -> u32 {
    500
}
fn d_span_name() -> String {
    "conversation".into()
}
fn d_policy() -> Value {
    serde_json::json!({"kind": "NeverConfirm"})
}

/// Timestamps as the reference writes them: UTC, microseconds, `Z`.
pub mod utc_z {
    use super::*;

    /// Serializes `2026-11-30T08:44:04.059781Z`.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&openhands_wire::time::format_utc(t))
    }

    /// Parses RFC 3339 (any offset) or a naive time taken as UTC.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).ok_or_else(|| serde::de::Error::custom(format!("invalid datetime '{text}'")))
    }

    /// Parses a timestamp string.
    pub fn parse(text: &str) -> Option<DateTime<Utc>> {
        if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
            return Some(t.with_timezone(&Utc));
        }
        chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|n| n.and_utc())
    }
}

/// Conversation ids in `meta.json`: written as 32 hex digits, read in
/// either form.
mod hex_uuid {
    use super::*;

    pub fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&id.simple().to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        Uuid::try_parse(text.trim()).map_err(serde::de::Error::custom)
    }
}

mod opt_hex_uuid {
    use super::*;

    pub fn serialize<S: Serializer>(id: &Option<Uuid>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_str(&id.simple().to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Uuid>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text {
            None => Ok(None),
            Some(t) => Uuid::try_parse(t.trim())
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The contents of `meta.json`, field for field as the reference writes
/// them. Settings this server stores but does not interpret are kept as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredConversation {
    /// `{"working_dir", "kind"}`.
    pub workspace: Value,
    /// Whether the conversation runs in a git worktree.
    #[serde(default)]
    pub worktree: bool,
    /// Whether its processes run in a sandbox (`conversation_runtime:
    /// "sandbox"`; ours, written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandboxed: bool,
    /// Worktree options.
    #[serde(default)]
    pub worktree_options: Value,
    /// The id requested at creation (the request field, usually null).
    #[serde(default)]
    pub conversation_id: Value,
    /// Owning conversation, if any.
    #[serde(default, with = "opt_hex_uuid")]
    pub parent_conversation_id: Option<Uuid>,
    /// Confirmation policy at creation.
    #[serde(default = "d_policy")]
    pub confirmation_policy: Value,
    /// Security analyzer at creation.
    #[serde(default)]
    pub security_analyzer: Value,
    /// The initial message of the start request.
    #[serde(default)]
    pub initial_message: Value,
    /// Iteration limit per run.
    #[serde(default = "d_max_iterations")]
    pub max_iterations: u32,
    /// Whether stuck detection runs.
    #[serde(default = "d_true")]
    pub stuck_detection: bool,
    /// Secrets of the start request, protected (encrypted or redacted).
    #[serde(default)]
    pub secrets: Map<String, Value>,
    /// Whether the request's secrets were encrypted.
    #[serde(default)]
    pub secrets_encrypted: bool,
    /// Tool name → module qualname (clients re-register tool classes with it).
    #[serde(default)]
    pub tool_module_qualnames: Map<String, Value>,
    /// Client-defined tool specs.
    #[serde(default)]
    pub client_tools: Vec<Value>,
    /// Agent launch additions.
    #[serde(default)]
    pub agent_launch_additions: Value,
    /// Sub-agent definitions.
    #[serde(default)]
    pub agent_definitions: Vec<Value>,
    /// Plugins.
    #[serde(default)]
    pub plugins: Value,
    /// Hook configuration.
    #[serde(default)]
    pub hook_config: Value,
    /// Tags (lowercase alphanumeric keys).
    #[serde(default)]
    pub tags: Map<String, Value>,
    /// User id.
    #[serde(default)]
    pub user_id: Value,
    /// Observability metadata.
    #[serde(default)]
    pub observability_metadata: Map<String, Value>,
    /// Observability tags.
    #[serde(default)]
    pub observability_tags: Vec<Value>,
    /// Observability span name.
    #[serde(default = "d_span_name")]
    pub observability_span_name: String,
    /// Observability parent span context.
    #[serde(default)]
    pub observability_parent_span_context: Value,
    /// Whether a title is generated after the first user message.
    #[serde(default = "d_true")]
    pub autotitle: bool,
    /// LLM profile used for titles.
    #[serde(default)]
    pub title_llm_profile: Value,
    /// Extra prompt.
    #[serde(default)]
    pub prompt: Value,
    /// Credential bindings the runtime requires.
    #[serde(default)]
    pub required_runtime_credential_bindings: Vec<Value>,
    /// The conversation id (hex on disk).
    #[serde(with = "hex_uuid")]
    pub id: Uuid,
    /// Title.
    #[serde(default)]
    pub title: Option<String>,
    /// Metrics snapshot.
    #[serde(default)]
    pub metrics: Value,
    /// Creation time (UTC).
    #[serde(with = "utc_z", default = "Utc::now")]
    pub created_at: DateTime<Utc>,
    /// Last activity (UTC).
    #[serde(with = "utc_z", default = "Utc::now")]
    pub updated_at: DateTime<Utc>,
    /// Source of a fork.
    #[serde(default, with = "opt_hex_uuid")]
    pub forked_from_conversation_id: Option<Uuid>,
    /// Branch point of a fork.
    #[serde(default)]
    pub forked_from_event_id: Option<String>,
    /// Agent profile provenance.
    #[serde(default)]
    pub launched_agent_profile: Value,
    /// Fields of newer peers, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StoredConversation {
    /// Metadata for a new conversation with default settings.
    pub fn new(id: Uuid, workspace: Value) -> Self {
        let now = Utc::now();
        Self {
            workspace,
            worktree: false,
            sandboxed: false,
            worktree_options: Value::Null,
            conversation_id: Value::Null,
            parent_conversation_id: None,
            confirmation_policy: d_policy(),
            security_analyzer: Value::Null,
            initial_message: Value::Null,
            max_iterations: d_max_iterations(),
            stuck_detection: true,
            secrets: Map::new(),
            secrets_encrypted: false,
            tool_module_qualnames: Map::new(),
            client_tools: Vec::new(),
            agent_launch_additions: Value::Null,
            agent_definitions: Vec::new(),
            plugins: Value::Null,
            hook_config: Value::Null,
            tags: Map::new(),
            user_id: Value::Null,
            observability_metadata: Map::new(),
            observability_tags: Vec::new(),
            observability_span_name: d_span_name(),
            observability_parent_span_context: Value::Null,
            autotitle: true,
            title_llm_profile: Value::Null,
            prompt: Value::Null,
            required_runtime_credential_bindings: Vec::new(),
            id,
            title: None,
            metrics: Value::Null,
            created_at: now,
            updated_at: now,
            forked_from_conversation_id: None,
            forked_from_event_id: None,
            launched_agent_profile: Value::Null,
            extra: Map::new(),
        }
    }

    /// Reads `<dir>/meta.json`.
    pub fn load(dir: &Path) -> Result<Self, StateFileError> {
        read_json(&dir.join(META_FILE))
    }

    /// Writes `<dir>/meta.json` atomically.
    pub fn save(&self, dir: &Path) -> Result<(), StateFileError> {
        let path = dir.join(META_FILE);
        let bytes = serde_json::to_vec(self).map_err(StateFileError::Encode)?;
        write_atomic(&path, &bytes, Durability::default())
            .map_err(|source| StateFileError::Write { path, source })
    }
}

/// Why a conversation's stored JSON file (`meta.json`, `base_state.json`)
/// could not be read or written; the text names the file.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// The file could not be read.
    #[error("read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
    /// The file is not JSON of the expected shape.
    #[error("invalid {}: {source}", .path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The value could not be encoded.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    /// The file could not be written.
    #[error("write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
}

/// Reads and parses the JSON file at `path`.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, StateFileError> {
    let bytes = std::fs::read(path).map_err(|source| StateFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| StateFileError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_meta_json_round_trips() {
        let text = r#"{"workspace":{"working_dir":"/w","kind":"LocalWorkspace"},"worktree":false,"worktree_options":null,"conversation_id":null,"parent_conversation_id":null,"confirmation_policy":{"kind":"NeverConfirm"},"security_analyzer":null,"initial_message":null,"max_iterations":500,"stuck_detection":true,"secrets":{},"secrets_encrypted":false,"tool_module_qualnames":{"terminal":"openhands.tools.terminal.definition"},"client_tools":[],"agent_launch_additions":null,"agent_definitions":[],"plugins":null,"hook_config":null,"tags":{},"user_id":null,"observability_metadata":{},"observability_tags":[],"observability_span_name":"conversation","observability_parent_span_context":null,"autotitle":true,"title_llm_profile":null,"prompt":null,"required_runtime_credential_bindings":[],"id":"5db4fb1743b44c4e91af498aa756b5e5","title":"Compat test conversation","metrics":null,"created_at":"2026-11-30T08:44:04.059781Z","updated_at":"2026-11-30T08:44:05.088981Z","forked_from_conversation_id":null,"forked_from_event_id":null,"launched_agent_profile":null}"#;
        let m: StoredConversation = serde_json::from_str(text).unwrap();
        assert_eq!(
            m.id.simple().to_string(),
            "5db4fb1743b44c4e91af498aa756b5e5"
        );
        assert_eq!(m.title.as_deref(), Some("Compat test conversation"));
        let back = serde_json::to_string(&m).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&back).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let mut m =
            StoredConversation::new(Uuid::new_v4(), serde_json::json!({"working_dir": "/x"}));
        m.forked_from_conversation_id = Some(Uuid::new_v4());
        m.save(dir.path()).unwrap();
        let back = StoredConversation::load(dir.path()).unwrap();
        assert_eq!(back.id, m.id);
        assert_eq!(
            back.forked_from_conversation_id,
            m.forked_from_conversation_id
        );
        assert_eq!(
            openhands_wire::time::format_utc(&back.created_at),
            openhands_wire::time::format_utc(&m.created_at)
        );
    }
}
