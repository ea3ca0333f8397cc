//! The MCP servers of the server's settings (`settings.json`,
//! `agent_settings.mcp_config`), as the reference's
//! `/api/settings/mcp/{settings_key}` keeps them: created (never replacing
//! an entry), patched sparsely (nested `null` deletes a key), deleted;
//! every entry validated as an MCP server; secrets (`env`, `headers`, the
//! `auth` credential, the OAuth state) Fernet-encrypted with the server's
//! key (plain without one, as the reference does). Answers are the
//! reference's `SettingsResponse` with secrets redacted.
//!
//! [`SettingsOAuthStates`] is where conversations find the OAuth tokens of
//! a remote server by its URL, and where refreshed tokens are written
//! back, as the reference's settings-backed token store.

use super::mcp_oauth::sealed;
use super::profiles::settings::SettingsFile;
use openhands_mcp::oauth::{OAuthState, OAuthStateStore};
use openhands_mcp::{McpConfig, UnknownFields};
use openhands_protocol::conversations::{loc, redact_value};
use openhands_protocol::validation::{ValidationError, ValidationIssue};
use openhands_sdk::profiles::StoreError;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use serde_json::{Map, Value, json};

/// What a secret is shown as.
const REDACTED: &str = "**********";

/// Why a change was refused.
#[derive(Debug, thiserror::Error)]
pub enum McpSettingsError {
    /// `POST` of a key that exists.
    #[error("MCP server '{0}' already exists")]
    Exists(String),
    /// `PATCH`/`DELETE` of a key that does not.
    #[error("MCP server '{0}' was not found")]
    Missing(String),
    /// The server (or the patched result) is not a valid MCP server.
    #[error("invalid MCP server")]
    Invalid(ValidationError),
    /// The settings file cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The settings' MCP servers.
#[derive(Debug, Clone)]
pub struct McpSettings {
    file: SettingsFile,
    cipher: Option<Cipher>,
}

/// Each secret string of a server entry (`env`/`headers` values, the
/// `auth` credential's secrets, its OAuth state's tokens).
fn each_secret(server: &mut Map<String, Value>, f: &mut impl FnMut(&mut String)) {
    let strings_of = |v: Option<&mut Value>, f: &mut dyn FnMut(&mut String)| {
        if let Some(Value::Object(m)) = v {
            for v in m.values_mut() {
                if let Value::String(s) = v {
                    f(s);
                }
            }
        }
    };
    strings_of(server.get_mut("env"), f);
    strings_of(server.get_mut("headers"), f);
    let Some(Value::Object(auth)) = server.get_mut("auth") else {
        return;
    };
    for k in ["value", "password"] {
        if let Some(Value::String(s)) = auth.get_mut(k) {
            f(s);
        }
    }
    strings_of(auth.get_mut("headers"), f);
    if let Some(Value::String(s)) = auth
        .get_mut("authentication")
        .and_then(Value::as_object_mut)
        .and_then(|a| a.get_mut("client_secret"))
    {
        f(s);
    }
    if let Some(Value::Object(state)) = auth.get_mut("state") {
        for (outer, inner) in [
            ("tokens", "access_token"),
            ("tokens", "refresh_token"),
            ("client_info", "client_secret"),
        ] {
            if let Some(Value::String(s)) = state
                .get_mut(outer)
                .and_then(Value::as_object_mut)
                .and_then(|o| o.get_mut(inner))
            {
                f(s);
            }
        }
    }
}

/// A server entry with every secret redacted (for error answers).
pub fn redacted_server(server: &Value) -> Value {
    let mut input = server.clone();
    if let Value::Object(m) = &mut input {
        each_secret(m, &mut |s: &mut String| *s = REDACTED.into());
    }
    input
}

/// Deep merge of a patch: objects merge, a nested `null` deletes the key.
fn merge(into: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        match (into.get_mut(k), v) {
            (_, Value::Null) => {
                into.remove(k);
            }
            (Some(Value::Object(a)), Value::Object(b)) => merge(a, b),
            (_, Value::Object(b)) => {
                let mut fresh = Map::new();
                merge(&mut fresh, b);
                into.insert(k.clone(), Value::Object(fresh));
            }
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The object under `k` (created, or replacing a non-object).
fn object_at<'a>(m: &'a mut Map<String, Value>, k: &str) -> &'a mut Map<String, Value> {
    let v = m.entry(k).or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(o) => o,
        _ => unreachable!("made an object above"),
    }
}

/// `agent_settings.mcp_config` of a settings object (created if absent).
fn mcp_config(settings: &mut Map<String, Value>) -> &mut Map<String, Value> {
    object_at(object_at(settings, "agent_settings"), "mcp_config")
}

impl McpSettings {
    /// The MCP servers of `file`, secrets sealed with `cipher`.
    pub fn new(file: SettingsFile, cipher: Option<Cipher>) -> Self {
        Self { file, cipher }
    }

    /// Validates `server` as the MCP server `key` (errors located under
    /// `body`).
    fn validate(key: &str, server: &Value) -> Result<(), McpSettingsError> {
        McpConfig::parse(&json!({ key: server }), UnknownFields::Refuse)
            .map(|_| ())
            .map_err(|e| {
                let mut path = vec!["body"];
                if let Some(f) = &e.field {
                    path.extend(f.split('.'));
                }
                let message = format!("Value error, {}", e.message);
                McpSettingsError::Invalid(ValidationError::new(vec![
                    ValidationIssue::new(
                        "value_error",
                        loc(&path),
                        message,
                        redact_value(server.clone()),
                    )
                    .with_ctx(json!({"error": e.message})),
                ]))
            })
    }

    /// The entry with its secrets encrypted.
    fn seal(&self, server: &Value) -> Value {
        let mut v = server.clone();
        if let (Some(c), Value::Object(m)) = (&self.cipher, &mut v) {
            each_secret(m, &mut |s: &mut String| {
                if !looks_encrypted(s) && !s.is_empty() && s != REDACTED {
                    *s = c.encrypt(s);
                }
            });
        }
        v
    }

    /// The entry with its encrypted secrets decrypted.
    fn open(&self, server: &Value) -> Value {
        let mut v = server.clone();
        if let (Some(c), Value::Object(m)) = (&self.cipher, &mut v) {
            each_secret(m, &mut |s: &mut String| {
                if looks_encrypted(s)
                    && let Some(plain) = c.decrypt(s)
                {
                    *s = plain;
                }
            });
        }
        v
    }

    /// `POST`: adds `key` (409 when it exists).
    pub async fn create(&self, key: String, server: Value) -> Result<Value, McpSettingsError> {
        Self::validate(&key, &server)?;
        let sealed = self.seal(&server);
        self.update(move |servers| {
            if servers.contains_key(&key) {
                return Err(McpSettingsError::Exists(key));
            }
            servers.insert(key, sealed);
            Ok(())
        })
        .await
    }

    /// `PATCH`: merges `patch` into `key` (404 when it does not exist).
    pub async fn patch(
        &self,
        key: String,
        patch: Map<String, Value>,
    ) -> Result<Value, McpSettingsError> {
        let this = self.clone();
        self.update(move |servers| {
            let Some(current) = servers.get(&key) else {
                return Err(McpSettingsError::Missing(key));
            };
            let mut merged = match this.open(current) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            merge(&mut merged, &patch);
            let merged = Value::Object(merged);
            Self::validate(&key, &merged)?;
            servers.insert(key, this.seal(&merged));
            Ok(())
        })
        .await
    }

    /// `DELETE`: removes `key` (404 when it does not exist).
    pub async fn delete(&self, key: String) -> Result<Value, McpSettingsError> {
        self.update(move |servers| match servers.remove(&key) {
            Some(_) => Ok(()),
            None => Err(McpSettingsError::Missing(key)),
        })
        .await
    }

    async fn update(
        &self,
        f: impl FnOnce(&mut Map<String, Value>) -> Result<(), McpSettingsError> + Send + 'static,
    ) -> Result<Value, McpSettingsError> {
        let file = self.file.clone();
        let done = tokio::task::spawn_blocking(move || {
            file.update(|settings| {
                let mut draft = settings.clone();
                f(mcp_config(&mut draft))?;
                *settings = draft;
                Ok::<Value, McpSettingsError>(response(settings))
            })
        })
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e.to_string())))?;
        done?
    }

    /// The OAuth state stored for the server at `url` (decrypted).
    fn oauth_state(&self, url: &str) -> Option<OAuthState> {
        let settings = self.file.read().ok()??;
        let servers = settings
            .get("agent_settings")?
            .get("mcp_config")?
            .as_object()?;
        let (_, server) = find_oauth_server(servers, url)?;
        let state = server.get("auth")?.get("state")?.as_object()?;
        Some(sealed::open(state, self.cipher.as_ref()))
    }

    /// Stores `state` under the settings server at `url`; `false` when
    /// no settings server has that URL (or the file cannot be written).
    fn save_oauth_state(&self, url: &str, state: &OAuthState) -> bool {
        let sealed = sealed::seal(state, self.cipher.as_ref());
        let url = url.to_string();
        let written = self.file.update(|settings| {
            let servers = mcp_config(settings);
            let Some((key, _)) = find_oauth_server(servers, &url) else {
                return false;
            };
            let key = key.to_string();
            if let Some(Value::Object(auth)) = servers.get_mut(&key).and_then(|s| s.get_mut("auth"))
            {
                auth.insert("state".into(), sealed);
                return true;
            }
            false
        });
        match written {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(%url, error = %e, "MCP OAuth state not persisted");
                false
            }
        }
    }
}

/// The settings server using OAuth at `url` (trailing `/` ignored).
fn find_oauth_server<'a>(
    servers: &'a Map<String, Value>,
    url: &str,
) -> Option<(&'a str, &'a Value)> {
    let want = url.trim_end_matches('/');
    servers.iter().find_map(|(k, s)| {
        let same = s.get("url")?.as_str()?.trim_end_matches('/') == want;
        let oauth = match s.get("auth")? {
            Value::String(a) => a == "oauth",
            Value::Object(a) => a.get("strategy").and_then(Value::as_str) == Some("oauth2"),
            _ => false,
        };
        (same && oauth).then_some((k.as_str(), s))
    })
}

/// The reference's `SettingsResponse` of `settings`, secrets redacted.
pub fn response(settings: &Map<String, Value>) -> Value {
    let mut agent = settings
        .get("agent_settings")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let llm_key_set = agent
        .pointer("/llm/api_key")
        .and_then(Value::as_str)
        .is_some_and(|k| !k.is_empty());
    if let Some(Value::String(k)) = agent.pointer_mut("/llm/api_key")
        && !k.is_empty()
    {
        *k = REDACTED.into();
    }
    if let Some(Value::Object(servers)) = agent.get_mut("mcp_config") {
        for s in servers.values_mut() {
            if let Value::Object(m) = s {
                each_secret(m, &mut |s: &mut String| {
                    if !s.is_empty() {
                        *s = REDACTED.into();
                    }
                });
            }
        }
    }
    let get = |k: &str, default: Value| settings.get(k).cloned().unwrap_or(default);
    json!({
        "agent_settings": agent,
        "conversation_settings": get("conversation_settings", json!({})),
        "llm_api_key_is_set": llm_key_set,
        "active_profile": get("active_profile", Value::Null),
        "active_agent_profile_id": get("active_agent_profile_id", Value::Null),
        "active_meta_profile": get("active_meta_profile", Value::Null),
        "misc_settings": get("misc_settings", json!({})),
    })
}

/// The OAuth states of the settings' MCP servers, by URL: what
/// conversations read and where refreshed tokens are written back. A
/// server absent from the settings (passed inline on the agent) starts
/// from its own `auth.state`; its refreshed state is kept in memory here,
/// so a rotated refresh token is not reused.
#[derive(Debug, Clone)]
pub struct SettingsOAuthStates {
    settings: McpSettings,
    inline: std::sync::Arc<openhands_mcp::oauth::MemoryStates>,
}

impl SettingsOAuthStates {
    /// The states of `settings`' servers.
    pub fn new(settings: McpSettings) -> Self {
        Self {
            settings,
            inline: std::sync::Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl OAuthStateStore for SettingsOAuthStates {
    async fn load(&self, server_url: &str) -> Option<OAuthState> {
        let (this, url) = (self.settings.clone(), server_url.to_string());
        let stored = tokio::task::spawn_blocking(move || this.oauth_state(&url))
            .await
            .ok()
            .flatten();
        stored.or_else(|| self.inline.get(server_url))
    }

    async fn save(&self, server_url: &str, state: OAuthState) {
        let (this, url, st) = (self.settings.clone(), server_url.to_string(), state.clone());
        let persisted = tokio::task::spawn_blocking(move || this.save_oauth_state(&url, &st))
            .await
            .unwrap_or(false);
        if !persisted {
            self.inline.save(server_url, state).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_merge_and_null_deletes() {
        let mut a = json!({"url": "u", "headers": {"A": "1", "B": "2"}})
            .as_object()
            .cloned()
            .unwrap();
        merge(
            &mut a,
            json!({"headers": {"A": null, "C": "3"}, "timeout": 5})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            Value::Object(a),
            json!({"url": "u", "headers": {"B": "2", "C": "3"}, "timeout": 5})
        );
    }

    #[test]
    fn secrets_are_found_everywhere() {
        let mut s = json!({"env": {"K": "e"}, "headers": {"H": "h"},
            "auth": {"strategy": "oauth2", "authentication": {"client_secret": "cs"},
                     "state": {"tokens": {"access_token": "at", "refresh_token": "rt"}}}})
        .as_object()
        .cloned()
        .unwrap();
        let mut seen = Vec::new();
        each_secret(&mut s, &mut |v: &mut String| seen.push(v.clone()));
        seen.sort();
        assert_eq!(seen, vec!["at", "cs", "e", "h", "rt"]);
    }
}
