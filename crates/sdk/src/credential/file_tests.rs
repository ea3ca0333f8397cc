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

/// Without a monitor: rotations are synced by `flush` only.
async fn file_for(store: &Arc<Store>, reg: &SecretsRegistry) -> FileCredential {
    FileCredential::materialize_monitored(
        CODEX_AUTH_SECRET_NAME,
        "auth.json",
        store.clone(),
        reg,
        None,
    )
    .await
    .unwrap()
}

/// Rewrites the file atomically, as the ACP server's refresh does.
fn rotate(path: &Path, value: &str) {
    openhands_workspace::fsutil::write_atomic(
        path,
        value.as_bytes(),
        openhands_workspace::fsutil::Durability::Immediate,
    )
    .unwrap();
}

/// Waits (2 s at most) until `done` holds.
async fn until(done: impl Fn() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition not reached");
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

#[tokio::test]
async fn the_monitor_syncs_a_rotation_while_the_turn_runs() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = FileCredential::materialize_monitored(
        CODEX_AUTH_SECRET_NAME,
        "auth.json",
        store.clone(),
        &reg,
        Some(Duration::from_millis(5)),
    )
    .await
    .unwrap();
    rotate(f.path(), &auth("r2"));
    until(|| {
        store
            .current
            .lock()
            .as_ref()
            .is_some_and(|c| c.0 == auth("r2"))
    })
    .await;
    assert_eq!(*store.replaces.lock(), vec![("1".to_string(), auth("r2"))]);
    assert_eq!(reg.mask("acc-r2"), "<secret-hidden>");
    // Nothing left for the flush after the turn, nor for the close.
    f.flush().await.unwrap();
    f.close().await.unwrap();
    assert_eq!(store.replaces.lock().len(), 1);
}

#[tokio::test]
async fn the_monitor_stops_at_a_conflict_which_sticks() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = FileCredential::materialize_monitored(
        CODEX_AUTH_SECRET_NAME,
        "auth.json",
        store.clone(),
        &reg,
        Some(Duration::from_millis(5)),
    )
    .await
    .unwrap();
    *store.race.lock() = Some(auth("other"));
    rotate(f.path(), &auth("r2"));
    until(|| !store.replaces.lock().is_empty()).await;
    // The monitor's conflict is the flush's answer, with no new call.
    assert!(matches!(f.flush().await, Err(CredentialError::Conflict(_))));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(store.replaces.lock().len(), 1);
    f.discard().await;
}

#[tokio::test]
async fn a_rotation_is_masked_before_it_is_synced() {
    let store = store_with(&auth("r1"));
    let reg = SecretsRegistry::new();
    let f = file_for(&store, &reg).await;
    std::fs::write(f.path(), auth("r2")).unwrap();
    assert_eq!(reg.mask("acc-r2"), "acc-r2");
    f.track_current().await;
    assert_eq!(reg.mask("acc-r2"), "<secret-hidden>");
    assert!(store.replaces.lock().is_empty());
    f.discard().await;
}
