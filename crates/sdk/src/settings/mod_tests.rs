use super::*;
use serde_json::json;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn defaults_settings() -> Settings {
    Settings::from_stored(&Map::new(), None).unwrap()
}

fn with_key(key: &str) -> SettingsPatch {
    SettingsPatch {
        agent_settings_diff: Some(obj(json!({"llm": {"api_key": key}}))),
        ..Default::default()
    }
}

#[test]
fn fresh_settings_are_the_defaults_with_a_timestamp() {
    let s = defaults_settings();
    assert_eq!(
        s.agent["llm"]["model"],
        defaults::openhands_agent()["llm"]["model"]
    );
    assert!(s.agent["agent_context"]["current_datetime"].is_string());
    assert!(!s.llm_api_key_is_set());
    assert_eq!(s.conversation["max_iterations"], 500);
}

#[test]
fn stored_secrets_are_sealed_and_tokens_posted_back_are_opened() {
    let cipher = Cipher::new("key", &[]).unwrap();
    let mut s = defaults_settings();
    s.apply(with_key("sk-secret"), None, Some(&cipher)).unwrap();
    assert!(s.llm_api_key_is_set());
    let stored = s.to_stored(Some(&cipher));
    assert!(
        !Value::Object(stored.clone())
            .to_string()
            .contains("sk-secret")
    );
    let back = Settings::from_stored(&stored, Some(&cipher)).unwrap();
    assert_eq!(back.agent["llm"]["api_key"], "sk-secret");
    let token = stored["agent_settings"]["llm"]["api_key"]
        .as_str()
        .unwrap()
        .to_string();
    s.apply(with_key(&token), None, Some(&cipher)).unwrap();
    assert_eq!(s.agent["llm"]["api_key"], "sk-secret");
}

#[test]
fn a_failed_patch_changes_nothing() {
    let mut s = defaults_settings();
    let before = s.clone();
    let patch = SettingsPatch {
        misc_settings_diff: Some(obj(json!({"a": 1}))),
        conversation_settings_diff: Some(obj(json!({"max_iterations": "x"}))),
        ..Default::default()
    };
    let err = s.apply(patch, None, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("conversation_settings.max_iterations"),
        "{err}"
    );
    assert_eq!(s, before);
}

#[test]
fn switching_agent_kind_starts_from_fresh_defaults_and_drops_routing() {
    let mut s = defaults_settings();
    s.set_meta_profile(Some("router".into()));
    assert_eq!(s.agent["enable_classify_and_switch_llm_tool"], true);
    let patch = SettingsPatch {
        agent_settings_diff: Some(obj(json!({"agent_kind": "acp"}))),
        ..Default::default()
    };
    s.apply(patch, None, None).unwrap();
    assert_eq!(s.agent["acp_server"], "claude-code");
    assert_eq!(s.active_meta_profile, None);
    let patch = SettingsPatch {
        agent_settings_diff: Some(obj(json!({"agent_kind": "openhands"}))),
        ..Default::default()
    };
    s.apply(patch, None, None).unwrap();
    assert_eq!(
        s.agent["llm"]["model"],
        defaults::openhands_agent()["llm"]["model"]
    );
}

#[test]
fn profile_llm_is_folded_in_unless_the_kind_is_acp() {
    let mut s = defaults_settings();
    let patch = SettingsPatch {
        active_profile: Some(Some("p".into())),
        ..Default::default()
    };
    s.apply(
        patch,
        Some(json!({"model": "from-profile", "api_key": "k"})),
        None,
    )
    .unwrap();
    assert_eq!(s.agent["llm"]["model"], "from-profile");
    assert_eq!(s.active_profile.as_deref(), Some("p"));
    assert!(s.llm_api_key_is_set());
}

#[test]
fn a_rotated_key_reads_old_tokens_and_the_next_write_reseals_them() {
    let dir = tempfile::tempdir().unwrap();
    let old = Cipher::new("key-a", &[]).unwrap();
    SettingsStore::in_dir(dir.path(), Some(old.clone()))
        .edit(|s| {
            s.apply(with_key("sk-rotate"), None, None)
                .map_err(|e| DocumentError::Corrupt(e.to_string()))
        })
        .unwrap();
    let rotated = SettingsStore::in_dir(
        dir.path(),
        Some(Cipher::new("key-b", &["key-a".to_string()]).unwrap()),
    );
    assert_eq!(rotated.load().unwrap().agent["llm"]["api_key"], "sk-rotate");
    rotated
        .edit(|s| {
            s.misc.insert("touched".into(), json!(true));
            Ok::<_, DocumentError>(())
        })
        .unwrap();
    let raw = rotated.file().read().unwrap().unwrap();
    let token = raw["agent_settings"]["llm"]["api_key"].as_str().unwrap();
    let only_b = Cipher::new("key-b", &[]).unwrap();
    assert_eq!(only_b.decrypt(token).as_deref(), Some("sk-rotate"));
    assert!(old.decrypt(token).is_none());
    // Without the old key the document no longer opens its secret.
    let forgot = SettingsStore::in_dir(dir.path(), Some(old));
    assert!(forgot.load().unwrap().agent["llm"]["api_key"].is_null());
}
