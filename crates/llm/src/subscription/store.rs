//! Where subscription tokens are kept: `<dir>/<vendor>_oauth.json`
//! (`type: "oauth"`, `vendor`, `access_token`, `refresh_token`,
//! `expires_at` in milliseconds), the directory `0700` and the file `0600`,
//! as the reference's `CredentialStore`. By default the directory is
//! `$OH_PERSISTENCE_DIR/auth`, else `~/.openhands/auth`. A [`TokenSeal`]
//! (the agent server's secret key) may encrypt the two tokens at rest.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Seconds of margin: a token expiring sooner counts as expired.
const EXPIRY_MARGIN_MS: i64 = 60_000;

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

/// OAuth credentials of a subscription.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthCredentials {
    /// The vendor (`openai`).
    pub vendor: String,
    /// The access token (sent as the bearer token).
    pub access_token: String,
    /// The refresh token.
    pub refresh_token: String,
    /// When the access token expires (ms since the epoch).
    pub expires_at: i64,
}

impl std::fmt::Debug for OAuthCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthCredentials")
            .field("vendor", &self.vendor)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl OAuthCredentials {
    /// Whether the access token is expired or expires within a minute.
    pub fn is_expired(&self) -> bool {
        self.expires_at < now_ms() + EXPIRY_MARGIN_MS
    }
}

/// Encrypts tokens at rest (the agent server's Fernet keys).
pub trait TokenSeal: Send + Sync {
    /// The stored form of `value`.
    fn seal(&self, value: &str) -> String;
    /// The value of a stored form; `None` when it cannot be opened.
    fn reveal(&self, stored: &str) -> Option<String>;
}

/// A failure to read or write the credentials file.
#[derive(Debug, thiserror::Error)]
#[error("subscription credentials {action} {path}: {source}")]
pub struct StoreError {
    action: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

/// The credentials files of one directory.
#[derive(Clone)]
pub struct CredentialStore {
    dir: PathBuf,
    seal: Option<Arc<dyn TokenSeal>>,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialStore")
            .field("dir", &self.dir)
            .field("sealed", &self.seal.is_some())
            .finish()
    }
}

/// The reference's default directory: `$OH_PERSISTENCE_DIR/auth`, else
/// `~/.openhands/auth` (`None` when neither is known).
pub fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| crate::provider_env::var(k).filter(|v| !v.trim().is_empty());
    var("OH_PERSISTENCE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".openhands")))
        .map(|d| d.join("auth"))
}

impl CredentialStore {
    /// The files in `dir`, tokens sealed by `seal` when given.
    pub fn new(dir: impl Into<PathBuf>, seal: Option<Arc<dyn TokenSeal>>) -> Self {
        Self {
            dir: dir.into(),
            seal,
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The credentials file of `vendor`.
    pub fn path(&self, vendor: &str) -> PathBuf {
        self.dir.join(format!("{vendor}_oauth.json"))
    }

    fn reveal(&self, stored: &str) -> Option<String> {
        match &self.seal {
            Some(s) => s.reveal(stored),
            None => Some(stored.to_string()),
        }
    }

    fn seal(&self, value: &str) -> String {
        match &self.seal {
            Some(s) => s.seal(value),
            None => value.to_string(),
        }
    }

    /// The stored credentials of `vendor`. A file that cannot be read as
    /// credentials is removed (as the reference does); `None` when absent.
    pub async fn get(&self, vendor: &str) -> Option<OAuthCredentials> {
        let _g = self.lock.lock().await;
        let path = self.path(vendor);
        let bytes = tokio::fs::read(&path).await.ok()?;
        let parsed = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|doc| {
                let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
                Some(OAuthCredentials {
                    vendor: text("vendor").unwrap_or_else(|| vendor.to_string()),
                    access_token: self.reveal(&text("access_token")?)?,
                    refresh_token: self.reveal(&text("refresh_token")?)?,
                    expires_at: doc.get("expires_at").and_then(Value::as_i64)?,
                })
            });
        if parsed.is_none() {
            tracing::warn!(path = %path.display(), "invalid subscription credentials file removed");
            let _ = tokio::fs::remove_file(&path).await;
        }
        parsed
    }

    /// Saves `credentials` (file `0600` in a `0700` directory).
    pub async fn save(&self, credentials: &OAuthCredentials) -> Result<(), StoreError> {
        let doc = json!({
            "type": "oauth",
            "vendor": credentials.vendor,
            "access_token": self.seal(&credentials.access_token),
            "refresh_token": self.seal(&credentials.refresh_token),
            "expires_at": credentials.expires_at,
        });
        let bytes = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        let _g = self.lock.lock().await;
        let path = self.path(&credentials.vendor);
        let err = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError {
                action,
                path,
                source,
            }
        };
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(err("create", &self.dir))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tokio::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .await
                .map_err(err("protect", &self.dir))?;
        }
        let mut open = tokio::fs::OpenOptions::new();
        open.write(true).create(true).truncate(true);
        #[cfg(unix)]
        open.mode(0o600);
        let mut file = open.open(&path).await.map_err(err("open", &path))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .await
                .map_err(err("protect", &path))?;
        }
        use tokio::io::AsyncWriteExt;
        file.write_all(&bytes).await.map_err(err("write", &path))?;
        file.sync_all().await.map_err(err("sync", &path))
    }

    /// Removes the credentials of `vendor`; whether there were any.
    pub async fn delete(&self, vendor: &str) -> Result<bool, StoreError> {
        let _g = self.lock.lock().await;
        let path = self.path(vendor);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError {
                action: "remove",
                path,
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rot;
    impl TokenSeal for Rot {
        fn seal(&self, value: &str) -> String {
            format!("sealed:{value}")
        }
        fn reveal(&self, stored: &str) -> Option<String> {
            stored.strip_prefix("sealed:").map(str::to_string)
        }
    }

    fn creds(expires_at: i64) -> OAuthCredentials {
        OAuthCredentials {
            vendor: "openai".into(),
            access_token: "acc".into(),
            refresh_token: "ref".into(),
            expires_at,
        }
    }

    #[tokio::test]
    async fn the_reference_file_round_trips_private_and_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::new(dir.path().join("auth"), None);
        assert!(store.get("openai").await.is_none());
        store.save(&creds(5)).await.unwrap();
        let doc: Value =
            serde_json::from_slice(&std::fs::read(store.path("openai")).unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"type": "oauth", "vendor": "openai", "access_token": "acc",
                "refresh_token": "ref", "expires_at": 5})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&store.path("openai")), 0o600);
            assert_eq!(mode(store.dir()), 0o700);
        }
        assert_eq!(store.get("openai").await, Some(creds(5)));

        let sealed = CredentialStore::new(dir.path().join("auth"), Some(Arc::new(Rot)));
        sealed.save(&creds(6)).await.unwrap();
        let text = std::fs::read_to_string(sealed.path("openai")).unwrap();
        assert!(text.contains("sealed:acc"), "{text}");
        assert_eq!(sealed.get("openai").await, Some(creds(6)));
        // A file that is not credentials is dropped, as the reference does.
        std::fs::write(store.path("openai"), "not json").unwrap();
        assert!(store.get("openai").await.is_none());
        assert!(!store.path("openai").exists());
        assert!(!store.delete("openai").await.unwrap());
    }

    #[test]
    fn expiry_has_a_minute_of_margin() {
        assert!(creds(now_ms() + 30_000).is_expired());
        assert!(!creds(now_ms() + 120_000).is_expired());
    }
}
