//! The relay's host key: an Ed25519 key made once, stored sealed with the
//! control plane's secret key (shared by every instance of one database).

use crate::secrets::{Sealer, random_bytes};
use crate::store::Store;
use russh::keys::PrivateKey;
use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;

/// The stored key's id.
const KEY_ID: &str = "ed25519";

/// Why the host key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyError {
    /// Randomness, sealing or opening failed.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The key could not be encoded or decoded.
    #[error("SSH host key: {0}")]
    Key(String),
}

/// The host key: the stored one, else a new one (stored sealed).
pub async fn load_or_create(store: &Store, sealer: &Sealer) -> Result<PrivateKey, HostKeyError> {
    let sealed = match store.host_key(KEY_ID).await? {
        Some(s) => s,
        None => {
            let seed: [u8; 32] = random_bytes(32)?
                .try_into()
                .map_err(|_| HostKeyError::Key("short random seed".into()))?;
            let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
            let text = key
                .to_openssh(LineEnding::LF)
                .map_err(|e| HostKeyError::Key(e.to_string()))?;
            store
                .host_key_or_insert(KEY_ID, &sealer.seal(&text))
                .await?
        }
    };
    let text = sealer.open(&sealed)?;
    PrivateKey::from_openssh(text.as_bytes()).map_err(|e| HostKeyError::Key(e.to_string()))
}
