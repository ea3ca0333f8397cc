//! MCP OAuth for a host without an agent server (the command line, a
//! program on the SDK): [`FileOAuthStates`] keeps each server's OAuth state
//! (tokens, client registration) in one file, every state a Fernet token,
//! so tokens survive between runs and are encrypted at rest; refreshed
//! tokens are written back by the connections that refresh them.
//! [`pending`] lists the enabled OAuth servers of a configuration that have
//! no tokens yet, and [`authorize`] runs one interactive authorization on
//! `openhands_mcp`'s flow (loopback callback listener, PKCE), handing the
//! URL to open to the caller.
//!
//! The user's store ([`user_store`]: `mcp_oauth.json` beside
//! `mcp_oauth.key` in the user persistence directory) is the one the
//! command line keeps, so a program on the SDK and the CLI share tokens.
//! [`interactive_consent`] lets a conversation authorize its servers
//! without tokens when it starts them (the URL printed on standard error
//! and opened in a browser when there is a desktop); [`user_defaults`]
//! gives both to a plain SDK conversation whose agent has OAuth servers.

use crate::secrets::Cipher;
use openhands_mcp::McpConfig;
use openhands_mcp::config::Transport;
use openhands_mcp::oauth::{
    Authorization, Consent, ConsentPrompt, OAuthError, OAuthState, OAuthStateStore,
};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Reading or writing the token file failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthFileError {
    /// The file or its key could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the JSON object this module writes.
    #[error("{0} is not a token file (a JSON object of server URLs); remove it to start over")]
    Malformed(PathBuf),
}

/// OAuth states in one file: `{"<server url>": "<Fernet token of the
/// state JSON>"}`, owner-only, replaced atomically. A state the cipher
/// cannot open (the key changed) counts as absent: the server is
/// authorized again.
#[derive(Debug)]
pub struct FileOAuthStates {
    path: PathBuf,
    cipher: Cipher,
    lock: Arc<Mutex<()>>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OAuthFileError + '_ {
    move |source| OAuthFileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn server_key(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

impl FileOAuthStates {
    /// The states in `path`, encrypted with `cipher`.
    pub fn new(path: impl Into<PathBuf>, cipher: Cipher) -> Self {
        Self {
            path: path.into(),
            cipher,
            lock: Arc::default(),
        }
    }

    /// Where the states are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_map(path: &Path) -> Result<Map<String, Value>, OAuthFileError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(io(path)(e)),
        };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(OAuthFileError::Malformed(path.to_path_buf())),
        }
    }

    /// The state stored for `server_url` (blocking file read).
    pub fn get(&self, server_url: &str) -> Result<Option<OAuthState>, OAuthFileError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let map = Self::read_map(&self.path)?;
        Ok(map
            .get(&server_key(server_url))
            .and_then(Value::as_str)
            .and_then(|token| self.cipher.decrypt(token))
            .and_then(|clear| serde_json::from_str::<Value>(&clear).ok())
            .and_then(|v| match v {
                Value::Object(m) => Some(OAuthState::from_json(m)),
                _ => None,
            }))
    }

    /// Replaces (or, with `None`, removes) the state of `server_url`
    /// (blocking read-modify-write).
    pub fn put(&self, server_url: &str, state: Option<&OAuthState>) -> Result<(), OAuthFileError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = Self::read_map(&self.path)?;
        match state {
            Some(s) => {
                let token = self.cipher.encrypt(&s.to_json().to_string());
                map.insert(server_key(server_url), Value::String(token));
            }
            None => {
                map.remove(&server_key(server_url));
            }
        }
        if let Some(dir) = self.path.parent() {
            crate::profiles::create_private_dir(dir).map_err(io(dir))?;
        }
        let text = serde_json::to_vec_pretty(&Value::Object(map))
            .map_err(|e| io(&self.path)(std::io::Error::other(e)))?;
        crate::fsutil::write_atomic(&self.path, &text, crate::fsutil::Durability::Immediate)
            .map_err(io(&self.path))
    }
}

#[async_trait::async_trait]
impl OAuthStateStore for FileOAuthStates {
    async fn load(&self, server_url: &str) -> Option<OAuthState> {
        let this = self.clone_handle();
        let url = server_url.to_string();
        match tokio::task::spawn_blocking(move || this.get(&url)).await {
            Ok(Ok(state)) => state,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the MCP OAuth tokens");
                None
            }
            Err(_) => None,
        }
    }

    async fn save(&self, server_url: &str, state: OAuthState) {
        let this = self.clone_handle();
        let url = server_url.to_string();
        match tokio::task::spawn_blocking(move || this.put(&url, Some(&state))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot save the MCP OAuth tokens"),
            Err(_) => {}
        }
    }
}

impl FileOAuthStates {
    fn clone_handle(&self) -> Self {
        Self {
            path: self.path.clone(),
            cipher: self.cipher.clone(),
            lock: self.lock.clone(),
        }
    }
}

/// The cipher of a key file: its passphrase, created (random, owner-only)
/// when the file does not exist yet.
pub fn key_file_cipher(path: &Path) -> Result<Cipher, OAuthFileError> {
    let key = match std::fs::read_to_string(path) {
        Ok(k) if !k.trim().is_empty() => k.trim().to_string(),
        Ok(_) => return Err(io(path)(std::io::Error::other("the key file is empty"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = fernet::Fernet::generate_key();
            if let Some(dir) = path.parent() {
                crate::profiles::create_private_dir(dir).map_err(io(dir))?;
            }
            crate::fsutil::write_atomic(path, key.as_bytes(), crate::fsutil::Durability::Immediate)
                .map_err(io(path))?;
            key
        }
        Err(e) => return Err(io(path)(e)),
    };
    Cipher::new(&key, &[]).ok_or_else(|| io(path)(std::io::Error::other("unusable key")))
}

/// How long an interactive authorization waits for the user's consent.
pub const CONSENT_LIMIT: Duration = Duration::from_secs(300);

/// The store in `dir` (`mcp_oauth.json`), encrypted with `cipher`, else
/// with the random key kept in `mcp_oauth.key` beside it (created on
/// first use).
pub fn user_store(dir: &Path, cipher: Option<Cipher>) -> Result<FileOAuthStates, OAuthFileError> {
    let cipher = match cipher {
        Some(c) => c,
        None => key_file_cipher(&dir.join("mcp_oauth.key"))?,
    };
    Ok(FileOAuthStates::new(dir.join("mcp_oauth.json"), cipher))
}

/// The user's store as a plain SDK program finds it: in the user
/// persistence directory (`$OH_PERSISTENCE_DIR`, else `~/.openhands`),
/// encrypted with `OH_SECRET_KEY` when set (as the command line and the
/// agent server do), else with the key file.
pub fn default_user_store() -> Result<FileOAuthStates, OAuthFileError> {
    let dir = crate::paths::user_persistence_dir().ok_or_else(|| OAuthFileError::Io {
        path: PathBuf::from("~/.openhands"),
        source: std::io::Error::other("neither OH_PERSISTENCE_DIR nor HOME is set"),
    })?;
    let cipher = openhands_workspace::exec::env::host_var("OH_SECRET_KEY")
        .filter(|k| !k.trim().is_empty())
        .and_then(|k| Cipher::new(&k, &[]));
    user_store(&dir, cipher)
}

pub use crate::desktop::open_browser;

/// The prompt of [`interactive_consent`]: the URL on standard error, and
/// in a browser when there is a desktop.
#[derive(Debug, Clone, Copy)]
pub struct PrintAndOpen;

impl ConsentPrompt for PrintAndOpen {
    fn show(&self, server: &str, url: &str) {
        eprintln!(
            "MCP server '{server}' needs your authorization. Open this URL in a browser:\n{url}\n\
             waiting for the authorization (up to {} minutes)…",
            CONSENT_LIMIT.as_secs() / 60
        );
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(open_browser(url.to_string()));
        }
    }
}

/// Authorizes servers without tokens when a conversation starts them,
/// through [`PrintAndOpen`], waiting up to [`CONSENT_LIMIT`] each.
pub fn interactive_consent() -> Consent {
    Consent {
        prompt: Arc::new(PrintAndOpen),
        limit: CONSENT_LIMIT,
    }
}

/// For a conversation in this process whose agent has enabled OAuth
/// servers and whose options name neither a token store nor a consent:
/// the user's store ([`default_user_store`], shared with the command line)
/// and [`interactive_consent`]. Other options are left alone (the agent
/// server keeps tokens in its settings and authorizes through its routes).
pub fn user_defaults(
    options: &mut crate::conversation::AgentOptions,
    mcp_config: &Map<String, Value>,
) -> Result<(), OAuthFileError> {
    if options.mcp_oauth_states.is_some() || options.mcp_oauth_consent.is_some() {
        return Ok(());
    }
    let uses_oauth = crate::mcp::config_of(mcp_config)
        .ok()
        .flatten()
        .is_some_and(|c| !oauth_servers(&c).is_empty());
    if uses_oauth {
        options.mcp_oauth_states = Some(Arc::new(default_user_store()?));
        options.mcp_oauth_consent = Some(interactive_consent());
    }
    Ok(())
}

/// An enabled OAuth server of a configuration.
#[derive(Debug, Clone)]
pub struct OAuthServer {
    /// Its name in the configuration.
    pub name: String,
    /// Its URL (the store's key).
    pub url: String,
    /// Its OAuth settings.
    pub oauth: openhands_mcp::oauth::OAuthConfig,
}

/// The enabled OAuth servers of `cfg`.
pub fn oauth_servers(cfg: &McpConfig) -> Vec<OAuthServer> {
    cfg.enabled()
        .filter_map(|s| {
            let oauth = s.oauth.clone()?;
            let url = match &s.transport {
                Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
                Transport::Stdio { .. } => return None,
            };
            Some(OAuthServer {
                name: s.name.clone(),
                url,
                oauth,
            })
        })
        .collect()
}

/// The enabled OAuth servers of `cfg` with no access token, neither in
/// `store` nor in their configuration's own state: the ones a connection
/// would refuse until a user authorizes them.
pub async fn pending(cfg: &McpConfig, store: &dyn OAuthStateStore) -> Vec<OAuthServer> {
    let mut out = Vec::new();
    for server in oauth_servers(cfg) {
        let stored = store.load(&server.url).await;
        let has_token = stored
            .as_ref()
            .or(server.oauth.state.as_ref())
            .is_some_and(|s| s.access_token().is_some());
        if !has_token {
            out.push(server);
        }
    }
    out
}

/// Authorizes `server` interactively: `show` gets the URL the user opens
/// (the redirect comes back to a loopback listener), then the code is
/// exchanged within `limit` and the tokens land in `store`.
pub async fn authorize(
    server: &OAuthServer,
    store: Arc<dyn OAuthStateStore>,
    limit: Duration,
    show: impl FnOnce(&str),
) -> Result<(), OAuthError> {
    let auth = Authorization::begin(&server.url, &server.oauth, store).await?;
    show(auth.authorization_url());
    auth.complete(limit).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn states_are_encrypted_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cipher = key_file_cipher(&dir.path().join("k")).unwrap();
        let again = key_file_cipher(&dir.path().join("k")).unwrap();
        let file = dir.path().join("sub").join("tokens.json");
        let store = FileOAuthStates::new(&file, cipher);
        assert!(store.load("http://h/mcp").await.is_none());
        let state = OAuthState::from_json(
            serde_json::json!({"tokens": {"access_token": "at-secret", "token_type": "Bearer"},
                               "client_info": {"client_id": "c"}})
            .as_object()
            .cloned()
            .unwrap(),
        );
        store.save("http://h/mcp/", state.clone()).await;
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("at-secret"), "{text}");
        assert!(text.contains("http://h/mcp"), "{text}");
        // Another store with the same key (a later run) reads it.
        let later = FileOAuthStates::new(&file, again);
        assert_eq!(later.load("http://h/mcp").await, Some(state));
        // Another key cannot: the server counts as not authorized.
        let other = FileOAuthStates::new(&file, Cipher::new("other", &[]).unwrap());
        assert!(other.load("http://h/mcp").await.is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
            let mode = std::fs::metadata(dir.path().join("k"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        later.put("http://h/mcp", None).unwrap();
        assert!(later.load("http://h/mcp").await.is_none());
        std::fs::write(&file, "[]").unwrap();
        assert!(matches!(
            later.get("http://h/mcp"),
            Err(OAuthFileError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn pending_lists_enabled_oauth_servers_without_tokens() {
        let cfg = McpConfig::parse(
            &serde_json::json!({"mcpServers": {
                "a": {"url": "http://a/mcp", "auth": "oauth"},
                "b": {"url": "http://b/mcp", "auth": "oauth", "enabled": false},
                "c": {"url": "http://c/mcp"},
                "d": {"url": "http://d/mcp", "auth": "oauth"}}}),
            openhands_mcp::UnknownFields::Refuse,
        )
        .unwrap();
        let store = openhands_mcp::oauth::MemoryStates::new();
        store
            .save(
                "http://d/mcp",
                OAuthState::from_json(
                    serde_json::json!({"tokens": {"access_token": "t"}})
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
            )
            .await;
        let names: Vec<String> = pending(&cfg, &store)
            .await
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, vec!["a"]);
    }
}
