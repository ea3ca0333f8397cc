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
fn stored_secrets_are_sealed_and_answers_redacted() {
    let cipher = Cipher::new("key", &[]).unwrap();
    let mut s = defaults_settings();
    let patch = SettingsPatch {
        agent_settings_diff: Some(obj(json!({"llm": {"api_key": "sk-secret"}}))),
        ..Default::default()
    };
    apply(&mut s, patch, None, Some(&cipher)).unwrap();
    assert!(s.llm_api_key_is_set());
    let stored = Value::Object(s.to_stored(Some(&cipher))).to_string();
    assert!(!stored.contains("sk-secret"));
    let back = Settings::from_stored(&s.to_stored(Some(&cipher)), Some(&cipher)).unwrap();
    assert_eq!(back.agent["llm"]["api_key"], "sk-secret");
    let answer = s.response(None, Some(&cipher)).unwrap();
    assert_eq!(answer["agent_settings"]["llm"]["api_key"], "**********");
    let plain = s.response(Some(Expose::Plaintext), None).unwrap();
    assert_eq!(plain["agent_settings"]["llm"]["api_key"], "sk-secret");
    let sealed = s.response(Some(Expose::Encrypted), Some(&cipher)).unwrap();
    let token = sealed["agent_settings"]["llm"]["api_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(token.starts_with("gAAAA"));
    assert!(matches!(
        s.response(Some(Expose::Encrypted), None),
        Err(SettingsError::NoCipher)
    ));
    // A token posted back is opened, not stored as the key.
    let patch = SettingsPatch {
        agent_settings_diff: Some(obj(json!({"llm": {"api_key": token}}))),
        ..Default::default()
    };
    apply(&mut s, patch, None, Some(&cipher)).unwrap();
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
    let err = apply(&mut s, patch, None, None).unwrap_err();
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
    apply(&mut s, patch, None, None).unwrap();
    assert_eq!(s.agent["acp_server"], "claude-code");
    assert_eq!(s.active_meta_profile, None);
    let patch = SettingsPatch {
        agent_settings_diff: Some(obj(json!({"agent_kind": "openhands"}))),
        ..Default::default()
    };
    apply(&mut s, patch, None, None).unwrap();
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
    apply(
        &mut s,
        patch,
        Some(json!({"model": "from-profile", "api_key": "k"})),
        None,
    )
    .unwrap();
    assert_eq!(s.agent["llm"]["model"], "from-profile");
    assert_eq!(s.active_profile.as_deref(), Some("p"));
    assert!(s.llm_api_key_is_set());
}
