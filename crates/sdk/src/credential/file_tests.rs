#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::credential::{CODEX_AUTH_SECRET_NAME, ResolvedCredential};
use crate::tool::SecretAccess;
use async_trait::async_trait;
use parking_lot::Mutex;

/// An in-memory canonical copy: versions count up from 1.
#[derive(Debug, Default)]
struct Store {
    current: Mutex<Option<(String, u64)>>,
    replaces: Mutex<Vec<(String, String)>>,
    /// Changes the store just before a `replace` is checked (another runtime).
    race: Mutex<Option<String>>,
}

#[async_trait]
impl VersionedCredentialBinding for Store {
    async fn load(&self) -> Result<ResolvedCredential, CredentialError> {
        let g = self.current.lock();
        let (value, version) = g
            .clone()
            .ok_or_else(|| CredentialError::NeedsReauthentication("missing".into()))?;
        Ok(ResolvedCredential {
            value,
            version: version.to_string(),
        })
    }

    async fn replace(&self, expected: &str, value: &str) -> Result<String, CredentialError> {
        self.replaces
            .lock()
            .push((expected.to_string(), value.to_string()));
        let mut g = self.current.lock();
        if let Some(other) = self.race.lock().take() {
            let v = g.as_ref().map_or(0, |c| c.1) + 1;
            *g = Some((other, v));
        }
        match g.as_mut() {
            Some((_, v)) if v.to_string() != expected => {
                Err(CredentialError::Conflict("changed".into()))
            }
            Some(cur) => {
                cur.0 = value.to_string();
                cur.1 += 1;
                Ok(cur.1.to_string())
            }
            None => Err(CredentialError::NeedsReauthentication("missing".into())),
        }
    }
}

fn auth(refresh: &str) -> String {
    serde_json::json!({"auth_mode": "chatgpt", "tokens": {"refresh_token": refresh, "access_token": format!("acc-{refresh}")}})
        .to_string()
}

fn store_with(value: &str) -> Arc<Store> {
    let s = Store::default();
    *s.current.lock() = Some((value.to_string(), 1));
    Arc::new(s)
}

async fn file_for(store: &Arc<Store>, reg: &SecretsRegistry) -> FileCredential {
    FileCredential::materialize(CODEX_AUTH_SECRET_NAME, "auth.json", store.clone(), reg)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_file_is_private_masked_and_removed_on_close() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = file_for(&store, &reg).await;
    let path = f.path().to_path_buf();
    let dir = f.dir().to_path_buf();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), auth("r1"));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(reg.mask("token acc-r1 here"), "token <secret-hidden> here");
    // Unchanged: nothing is written back.
    f.flush().await.unwrap();
    assert!(store.replaces.lock().is_empty());
    f.close().await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test]
async fn rotations_are_written_back_with_the_version_they_replace() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = file_for(&store, &reg).await;
    std::fs::write(f.path(), auth("r2")).unwrap();
    f.flush().await.unwrap();
    std::fs::write(f.path(), auth("r3")).unwrap();
    f.flush().await.unwrap();
    assert_eq!(
        *store.replaces.lock(),
        vec![("1".to_string(), auth("r2")), ("2".to_string(), auth("r3"))]
    );
    assert_eq!(store.current.lock().clone().unwrap(), (auth("r3"), 3));
    // The rotated token is masked too.
    assert_eq!(reg.mask("acc-r3"), "<secret-hidden>");
    // A file being rewritten into something invalid is not synced.
    std::fs::write(f.path(), "{not json").unwrap();
    let e = f.flush().await.unwrap_err();
    assert!(!e.is_permanent(), "{e:?}");
    f.discard().await;
}

#[tokio::test]
async fn a_conflicting_rotation_sticks_and_an_identical_one_converges() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = file_for(&store, &reg).await;
    // Another runtime wrote the same refresh: converged, no error.
    *store.race.lock() = Some(auth("r2"));
    std::fs::write(f.path(), auth("r2")).unwrap();
    f.flush().await.unwrap();
    // Another runtime wrote something else: a conflict, and it stays.
    *store.race.lock() = Some(auth("other"));
    std::fs::write(f.path(), auth("r3")).unwrap();
    let e = f.flush().await.unwrap_err();
    assert!(matches!(e, CredentialError::Conflict(_)), "{e:?}");
    let calls = store.replaces.lock().len();
    assert!(matches!(f.flush().await, Err(CredentialError::Conflict(_))));
    assert_eq!(
        store.replaces.lock().len(),
        calls,
        "a sticky error makes no call"
    );
    assert!(f.close().await.is_err());
}

#[tokio::test]
async fn an_invalid_or_missing_credential_needs_a_new_sign_in() {
    let reg = SecretsRegistry::new();
    let store = store_with("{\"tokens\": {}}");
    let e = FileCredential::materialize(CODEX_AUTH_SECRET_NAME, "auth.json", store, &reg)
        .await
        .unwrap_err();
    assert!(
        matches!(e, CredentialError::NeedsReauthentication(_)),
        "{e:?}"
    );
    let empty = Arc::new(Store::default());
    let e = FileCredential::materialize(CODEX_AUTH_SECRET_NAME, "auth.json", empty, &reg)
        .await
        .unwrap_err();
    assert!(
        matches!(e, CredentialError::NeedsReauthentication(_)),
        "{e:?}"
    );
}
