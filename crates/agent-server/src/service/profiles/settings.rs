//! The settings file (`<persistence_dir>/settings.json`) is the SDK's
//! ([`SettingsFile`]: locked, crash-safe read-modify-write); this module
//! adds the linked provider connections profiles read.

use openhands_sdk::profiles::StoreError;
pub use openhands_sdk::settings::SettingsFile;
use serde_json::Value;
use std::path::Path;

/// A shared provider connection (`provider-connections/provider_connections.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConnection {
    /// Stored API key (possibly a Fernet token).
    pub api_key: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
}

/// Looks up a provider connection by id; `Ok(None)` when it does not exist.
pub fn provider_connection(
    persistence_dir: &Path,
    id: &str,
) -> Result<Option<ProviderConnection>, StoreError> {
    let path = persistence_dir
        .join("provider-connections")
        .join("provider_connections.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let corrupt = |reason: &str| StoreError::Corrupt {
        name: "provider connections".into(),
        reason: reason.into(),
    };
    let data: Value =
        serde_json::from_slice(&bytes).map_err(|_| corrupt("file is not valid JSON"))?;
    let connections = data
        .get("connections")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt("no connections list"))?;
    Ok(connections
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .map(|c| ProviderConnection {
            api_key: c.get("api_key").and_then(Value::as_str).map(str::to_string),
            base_url: c
                .get("base_url")
                .and_then(Value::as_str)
                .map(str::to_string),
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn provider_connections_are_found_by_id() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(provider_connection(dir.path(), "c1").unwrap(), None);
        std::fs::create_dir_all(dir.path().join("provider-connections")).unwrap();
        std::fs::write(
            dir.path().join("provider-connections/provider_connections.json"),
            json!({"schema_version": 1, "connections": [{"id": "c1", "api_key": "k", "base_url": "u"}]})
                .to_string(),
        )
        .unwrap();
        let c = provider_connection(dir.path(), "c1").unwrap().unwrap();
        assert_eq!(c.api_key.as_deref(), Some("k"));
        assert_eq!(provider_connection(dir.path(), "c2").unwrap(), None);
    }
}
