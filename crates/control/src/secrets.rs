//! Secrets of the control plane: random credentials, their stored hashes,
//! and sealing (Fernet) of the values it must be able to read back — host
//! session keys and a sandbox's own LLM settings.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Prefix of customer access tokens.
pub const TOKEN_PREFIX: &str = "oht_";
/// Prefix of workspace API keys.
pub const KEY_PREFIX: &str = "ohk_";

/// Why a secret could not be made or opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The operating system's random source failed.
    #[error("no randomness available: {0}")]
    Random(String),
    /// The key file could not be read or written.
    #[error("secret key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The key file does not hold a Fernet key.
    #[error("secret key file {0} does not hold a Fernet key")]
    BadKeyFile(String),
    /// A sealed value does not open with this key (another key, or damaged).
    #[error("a sealed value cannot be opened with this control plane's secret key")]
    Unseal,
}

/// `n` random bytes from the operating system.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, SecretError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| SecretError::Random(e.to_string()))?;
    Ok(buf)
}

/// A new credential: `prefix` + 32 random bytes, URL-safe base64.
pub fn new_credential(prefix: &str) -> Result<String, SecretError> {
    Ok(format!(
        "{prefix}{}",
        URL_SAFE_NO_PAD.encode(random_bytes(32)?)
    ))
}

/// The stored form of a credential: SHA-256, hex.
pub fn hash_credential(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Seals and opens values with the control plane's Fernet key.
#[derive(Clone)]
pub struct Sealer {
    fernet: std::sync::Arc<fernet::Fernet>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// A sealer for the Fernet key `key` (`None` when it is not one).
    pub fn new(key: &str) -> Option<Self> {
        fernet::Fernet::new(key).map(|f| Self {
            fernet: std::sync::Arc::new(f),
        })
    }

    /// The configured key, or the one in `<data_dir>/secret.key` (created,
    /// mode 0600, when missing). Blocking: call from a blocking context.
    pub fn load(configured: Option<&str>, data_dir: &Path) -> Result<Self, SecretError> {
        if let Some(k) = configured {
            return Self::new(k)
                .ok_or_else(|| SecretError::BadKeyFile("OH_CONTROL_SECRET_KEY".into()));
        }
        let path = data_dir.join("secret.key");
        let err = |source| SecretError::KeyFile {
            path: path.to_string_lossy().into_owned(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::new(text.trim())
                .ok_or_else(|| SecretError::BadKeyFile(path.to_string_lossy().into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).map_err(err)?;
                let key = fernet::Fernet::generate_key();
                write_private(&path, key.as_bytes()).map_err(err)?;
                Self::new(&key)
                    .ok_or_else(|| SecretError::BadKeyFile(path.to_string_lossy().into_owned()))
            }
            Err(e) => Err(err(e)),
        }
    }

    /// The sealed (encrypted, authenticated) form of `plain`.
    pub fn seal(&self, plain: &str) -> String {
        self.fernet.encrypt(plain.as_bytes())
    }

    /// Opens a value [`Sealer::seal`] made.
    pub fn open(&self, sealed: &str) -> Result<String, SecretError> {
        let bytes = self
            .fernet
            .decrypt(sealed)
            .map_err(|_| SecretError::Unseal)?;
        String::from_utf8(bytes).map_err(|_| SecretError::Unseal)
    }
}

/// Writes `bytes` to a new file only its owner can read (0600), atomically
/// (temp file + rename), so a crash never leaves a partial key.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    openhands_workspace::fsutil::write_atomic(
        path,
        bytes,
        openhands_workspace::fsutil::Durability::Immediate,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_random_prefixed_and_hashed_stably() {
        let a = new_credential(KEY_PREFIX).unwrap();
        let b = new_credential(KEY_PREFIX).unwrap();
        assert!(a.starts_with(KEY_PREFIX));
        assert_ne!(a, b);
        assert_eq!(a.len(), KEY_PREFIX.len() + 43);
        assert_eq!(hash_credential(&a), hash_credential(&a));
        assert_ne!(hash_credential(&a), hash_credential(&b));
        assert_eq!(
            hash_credential("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn sealing_round_trips_and_a_generated_key_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::load(None, dir.path()).unwrap();
        let sealed = s.seal("host-key");
        assert!(!sealed.contains("host-key"));
        assert_eq!(s.open(&sealed).unwrap(), "host-key");
        let again = Sealer::load(None, dir.path()).unwrap();
        assert_eq!(again.open(&sealed).unwrap(), "host-key");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("secret.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let other = Sealer::new(&fernet::Fernet::generate_key()).unwrap();
        assert!(other.open(&sealed).is_err());
    }
}
