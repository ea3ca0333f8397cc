//! Tests of the LLM profile store.

use super::*;
use crate::secrets::Cipher;
use openhands_wire::SecretString;

fn config() -> LlmConfig {
    let mut c = LlmConfig::new("openai/gpt-5");
    c.api_key = Some(SecretString::new("sk-secret"));
    c.temperature = Some(0.3);
    c.usage_id = "fast".into();
    c
}

#[test]
fn save_load_list_delete_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(dir.path().join("profiles"), None);
    assert_eq!(store.list().unwrap(), Vec::<String>::new());
    store.save("fast", &config(), false).unwrap();
    let raw = std::fs::read_to_string(store.files().path("fast").unwrap()).unwrap();
    assert!(!raw.contains("sk-secret"));
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["api_key"], "**********");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["model"], "openai/gpt-5");
    let loaded = store.load("fast").unwrap();
    assert!(loaded.api_key.is_none());
    assert_eq!(loaded.temperature, Some(0.3));
    assert_eq!(loaded.usage_id, "fast");
    assert!(loaded.extra.get("schema_version").is_none());
    store.save("b.json", &config(), true).unwrap();
    assert_eq!(store.list().unwrap(), vec!["b", "fast"]);
    let summaries = store.list_summaries().unwrap();
    assert!(!summaries[1].api_key_set);
    assert!(summaries[0].api_key_set);
    assert_eq!(
        store.load("b").unwrap().api_key.unwrap().expose(),
        "sk-secret"
    );
    assert!(store.delete("fast").unwrap());
    assert!(!store.delete("fast").unwrap());
    assert!(matches!(store.load("fast"), Err(StoreError::NotFound(_))));
    // No temp files left behind.
    let leftovers = std::fs::read_dir(store.files().dir()).unwrap().count();
    assert_eq!(leftovers, 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.files().path("b").unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn names_are_validated() {
    for bad in [
        "",
        ".hidden",
        "../x",
        "a/b",
        "a\\b",
        "sp ace",
        "é",
        &"x".repeat(65),
    ] {
        assert!(
            matches!(canonical_name(bad), Err(StoreError::InvalidName(_))),
            "{bad}"
        );
    }
    for good in ["a", "gpt-5.1_fast", "A9", "x.json"] {
        assert!(canonical_name(good).is_ok());
    }
    let dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(dir.path(), None);
    assert!(matches!(
        store.save("../evil", &config(), true),
        Err(StoreError::InvalidName(_))
    ));
}

#[test]
fn corrupt_and_future_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(dir.path(), None);
    std::fs::write(dir.path().join("bad.json"), "{not json").unwrap();
    std::fs::write(dir.path().join("arr.json"), "[1]").unwrap();
    std::fs::write(
        dir.path().join("new.json"),
        r#"{"model":"x","schema_version":9}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("old.json"), r#"{"model":"x","api_key":""}"#).unwrap();
    std::fs::write(dir.path().join("note.txt"), "x").unwrap();
    for n in ["bad", "arr", "new"] {
        assert!(
            matches!(store.load(n), Err(StoreError::Corrupt { .. })),
            "{n}"
        );
    }
    let old = store.load("old").unwrap();
    assert_eq!(old.model, "x");
    assert!(old.api_key.is_none());
    assert_eq!(store.list().unwrap(), vec!["arr", "bad", "new", "old"]);
    assert_eq!(store.list_summaries().unwrap().len(), 2);
}

#[test]
fn rename_rules() {
    let dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(dir.path(), None);
    store.save("a", &config(), false).unwrap();
    store.save("b", &config(), false).unwrap();
    assert!(matches!(
        store.rename("a", "b"),
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store.rename("zz", "c"),
        Err(StoreError::NotFound(_))
    ));
    store.rename("a", "c").unwrap();
    assert!(store.exists("c"));
    assert!(!store.exists("a"));
    store.rename("c", "c").unwrap();
}

#[test]
fn default_dir_is_under_dot_openhands() {
    assert_eq!(
        LlmProfileStore::default_dir(Path::new("/home/u")),
        PathBuf::from("/home/u/.openhands/profiles")
    );
}

#[test]
fn secrets_are_encrypted_with_a_cipher_and_clear_only_without() {
    let dir = tempfile::tempdir().unwrap();
    let cipher = Cipher::new("key-1", &[]).unwrap();
    let store = LlmProfileStore::new(dir.path(), Some(cipher.clone()));
    store.save("enc", &config(), true).unwrap();
    let raw = std::fs::read_to_string(store.files().path("enc").unwrap()).unwrap();
    assert!(!raw.contains("sk-secret"));
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        cipher.decrypt(v["api_key"].as_str().unwrap()).as_deref(),
        Some("sk-secret")
    );
    assert_eq!(
        store.load("enc").unwrap().api_key.unwrap().expose(),
        "sk-secret"
    );
    // Another key cannot open it: the key loads as absent.
    let other = LlmProfileStore::new(dir.path(), Cipher::new("key-2", &[]));
    assert!(other.load("enc").unwrap().api_key.is_none());
    // A profile linked to a provider connection keeps no credentials.
    let mut linked = config();
    linked.base_url = Some("http://x".into());
    linked.extra.insert(
        "provider_connection_id".into(),
        Value::String("conn".into()),
    );
    store.save("linked", &linked, true).unwrap();
    let loaded = store.load("linked").unwrap();
    assert!(loaded.api_key.is_none());
    assert!(loaded.base_url.is_none());
}
