use super::*;
use serde_json::{Map, json};

#[test]
fn answers_redact_expose_or_seal_secrets() {
    let cipher = Cipher::new("key", &[]).unwrap();
    let mut s = Settings::from_stored(&Map::new(), None).unwrap();
    let patch = SettingsPatch {
        agent_settings_diff: json!({"llm": {"api_key": "sk-secret"}})
            .as_object()
            .cloned(),
        ..Default::default()
    };
    s.apply(patch, None, Some(&cipher)).unwrap();
    let answer = s.response(None, Some(&cipher)).unwrap();
    assert_eq!(answer["agent_settings"]["llm"]["api_key"], "**********");
    assert_eq!(answer["llm_api_key_is_set"], true);
    let plain = s.response(Some(Expose::Plaintext), None).unwrap();
    assert_eq!(plain["agent_settings"]["llm"]["api_key"], "sk-secret");
    let sealed = s.response(Some(Expose::Encrypted), Some(&cipher)).unwrap();
    let token = sealed["agent_settings"]["llm"]["api_key"].as_str().unwrap();
    assert_eq!(cipher.decrypt(token).as_deref(), Some("sk-secret"));
    assert!(matches!(
        s.response(Some(Expose::Encrypted), None),
        Err(SettingsError::NoCipher)
    ));
}
