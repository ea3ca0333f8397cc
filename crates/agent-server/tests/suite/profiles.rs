//! `/api/profiles` end to end: the reference's answers and file format,
//! encryption at rest (interoperable with the reference's files), key
//! rotation, name rules, activation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::gateway_support;

use gateway_support::{Gw, SECRET, Setup, scripts};
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use serde_json::{Value, json};

const FIXTURE_KEY: &str = "compat-fixture-secret-key-0123456789";

fn fixture_text(mock_url: &str) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../sdk/tests/fixtures/reference/profiles/fixture.json"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .replace("__MOCK_LLM_URL__", mock_url)
}

/// The field list of the reference's `GET /api/profiles/{name}` answer.
fn reference_config_keys() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../compat/recorded/profile_get.json"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["body"]["config"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn save_list_get_delete_like_the_reference() {
    let gw = Gw::start().await;
    let (s, v) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(s, 200);
    assert_eq!(v, json!({"profiles": [], "active_profile": null}));
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/fast",
            Some(json!({"llm": gw.llm(), "include_secrets": true})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        v,
        json!({"name": "fast", "message": "Profile 'fast' saved"})
    );
    let (_, v) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(
        v,
        json!({"profiles": [{"name": "fast", "model": "openai/mock-model",
            "base_url": gw.mock.base_url(), "provider_connection_id": null,
            "provider_connection_broken": false, "api_key_set": true}],
            "active_profile": null})
    );
    let (s, v) = gw.call("GET", "/api/profiles/fast", None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["name"], "fast");
    assert_eq!(v["api_key_set"], true);
    let config = v["config"].as_object().unwrap();
    assert!(config["api_key"].is_null());
    let keys: Vec<String> = config.keys().cloned().collect();
    assert_eq!(keys, reference_config_keys());
    assert_eq!(config["timeout"], json!(300));
    assert_eq!(config["num_retries"], json!(0));
    assert_eq!(config["api_mode"], "chat");
    assert_eq!(config["openrouter_app_name"], "OpenHands");
    let (s, v) = gw.call("GET", "/api/profiles/nope", None).await;
    assert_eq!((s, v), (404, json!({"detail": "Profile 'nope' not found"})));
    let (s, v) = gw.call("DELETE", "/api/profiles/fast", None).await;
    assert_eq!(s, 200);
    assert_eq!(
        v,
        json!({"name": "fast", "message": "Profile 'fast' deleted"})
    );
    // Deleting is idempotent.
    let (s, _) = gw.call("DELETE", "/api/profiles/fast", None).await;
    assert_eq!(s, 200);
    let (_, v) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(v["profiles"], json!([]));
    // The routes need the session key.
    let (s, _, v) = Gw::send(gw.client.get(gw.url("/api/profiles"))).await;
    assert_eq!((s, v), (401, json!({"detail": "Unauthorized"})));
    gw.stop().await;
}

#[tokio::test]
async fn the_file_is_the_reference_format_with_an_encrypted_key() {
    let gw = Gw::start().await;
    gw.save_profile("disk").await;
    let path = gw.profiles_dir().join("disk.json");
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(!raw.contains("sk-mock-123"), "the key is stored in clear");
    assert!(raw.starts_with("{\n  \"model\": \"openai/mock-model\",\n  \"api_key\": \"gAAAA"));
    let v: Value = serde_json::from_str(&raw).unwrap();
    let token = v["api_key"].as_str().unwrap();
    assert!(looks_encrypted(token));
    let cipher = Cipher::new(SECRET, &[]).unwrap();
    assert_eq!(cipher.decrypt(token).as_deref(), Some("sk-mock-123"));
    assert_eq!(v["schema_version"], 1);
    // Same keys, in the same order, as the file the reference wrote.
    let reference: Value = serde_json::from_str(&fixture_text("http://x")).unwrap();
    let ours: Vec<&String> = v.as_object().unwrap().keys().collect();
    let theirs: Vec<&String> = reference.as_object().unwrap().keys().collect();
    assert_eq!(ours, theirs);
    assert_eq!(v["retry_min_wait"], json!(8));
    assert_eq!(v["stream_idle_timeout"], json!(300.0));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Without include_secrets the key is redacted.
    let (s, _) = gw
        .call(
            "POST",
            "/api/profiles/nokey",
            Some(json!({"llm": gw.llm(), "include_secrets": false})),
        )
        .await;
    assert_eq!(s, 201);
    let v: Value =
        serde_json::from_slice(&std::fs::read(gw.profiles_dir().join("nokey.json")).unwrap())
            .unwrap();
    assert_eq!(v["api_key"], "**********");
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    let nokey = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "nokey")
        .unwrap()
        .clone();
    assert_eq!(nokey["api_key_set"], false);
    gw.stop().await;
}

#[tokio::test]
async fn a_profile_written_by_the_reference_decrypts_and_drives_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        secret_key: Some(FIXTURE_KEY.into()),
        ..Setup::default()
    };
    let gw = Gw::start_in(dir, setup, scripts()).await;
    std::fs::create_dir_all(gw.profiles_dir()).unwrap();
    let mock_url = gw.mock.url();
    std::fs::write(
        gw.profiles_dir().join("fixture.json"),
        fixture_text(&mock_url),
    )
    .unwrap();
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(list["profiles"][0]["name"], "fixture");
    assert_eq!(list["profiles"][0]["api_key_set"], true);
    let (s, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/fixture")
            .header("X-Expose-Secrets", "plaintext"),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["config"]["api_key"], "sk-fixture-123");
    let (s, id, body) = gw
        .chat(
            json!({"model": "openhands_fixture", "messages": [
                {"role": "user", "content": "[[mock:script:chat]] From the reference profile."}]}),
            None,
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert!(id.is_some());
    let auth: Vec<String> = gw
        .mock
        .completion_requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("From the reference profile."))
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(auth, vec!["Bearer sk-fixture-123".to_string()]);
    gw.stop().await;
}

#[tokio::test]
async fn previous_secret_keys_still_decrypt() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = dir.path().join("persistence").join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("old.json"),
        fixture_text("http://127.0.0.1:9"),
    )
    .unwrap();
    let setup = Setup {
        secret_key: Some("a-brand-new-key".into()),
        previous_secret_keys: vec![FIXTURE_KEY.into()],
        ..Setup::default()
    };
    let gw = Gw::start_in(dir, setup, scripts()).await;
    let (s, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/old")
            .header("X-Expose-Secrets", "plaintext"),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["config"]["api_key"], "sk-fixture-123");
    // Encrypted exposure re-encrypts with the current key.
    let (s, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/old")
            .header("X-Expose-Secrets", "encrypted"),
    )
    .await;
    assert_eq!(s, 200);
    let token = v["config"]["api_key"].as_str().unwrap();
    let current = Cipher::new("a-brand-new-key", &[]).unwrap();
    assert_eq!(current.decrypt(token).as_deref(), Some("sk-fixture-123"));
    // A token posted back is decrypted before it is stored again.
    let mut llm = v["config"].clone();
    llm["base_url"] = json!("http://127.0.0.1:9/v1");
    let (s, _) = gw
        .call(
            "POST",
            "/api/profiles/copy",
            Some(json!({"llm": llm, "include_secrets": true})),
        )
        .await;
    assert_eq!(s, 201);
    let (_, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/copy")
            .header("X-Expose-Secrets", "plaintext"),
    )
    .await;
    assert_eq!(v["config"]["api_key"], "sk-fixture-123");
    let (s, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/old")
            .header("X-Expose-Secrets", "everything"),
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(
        v["detail"],
        "Invalid X-Expose-Secrets header value: 'everything'. Valid values are: 'encrypted', 'plaintext'."
    );
    gw.stop().await;
}

#[tokio::test]
async fn without_a_secret_key_secrets_are_refused_or_redacted() {
    let gw = Gw::start_with(Setup {
        keys: vec![],
        secret_key: None,
        ..Setup::default()
    })
    .await;
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/p",
            Some(json!({"llm": gw.llm(), "include_secrets": true})),
        )
        .await;
    assert_eq!(s, 503, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("OH_SECRET_KEY"));
    assert!(!gw.profiles_dir().join("p.json").exists());
    let (s, _) = gw
        .call(
            "POST",
            "/api/profiles/p",
            Some(json!({"llm": gw.llm(), "include_secrets": false})),
        )
        .await;
    assert_eq!(s, 201);
    let raw = std::fs::read_to_string(gw.profiles_dir().join("p.json")).unwrap();
    assert!(!raw.contains("sk-mock-123"));
    // No key to protect: nothing refused.
    let mut keyless = gw.llm();
    keyless.as_object_mut().unwrap().remove("api_key");
    let (s, _) = gw
        .call(
            "POST",
            "/api/profiles/keyless",
            Some(json!({"llm": keyless})),
        )
        .await;
    assert_eq!(s, 201);
    let (s, _, v) = Gw::send(
        gw.req("GET", "/api/profiles/p")
            .header("X-Expose-Secrets", "encrypted"),
    )
    .await;
    assert_eq!(s, 503);
    assert_eq!(
        v["detail"],
        "Encryption not available: OH_SECRET_KEY is not configured. Cannot return encrypted secrets."
    );
    gw.stop().await;
}

#[tokio::test]
async fn names_are_validated_and_renames_follow_the_rules() {
    let gw = Gw::start().await;
    for bad in ["..%2Fevil", ".hidden", "a%20b", "x%2Fy"] {
        let (s, v) = gw
            .call(
                "POST",
                &format!("/api/profiles/{bad}"),
                Some(json!({"llm": gw.llm()})),
            )
            .await;
        assert_eq!(s, 422, "{bad}: {v}");
        assert_eq!(v["detail"][0]["type"], "string_pattern_mismatch");
        assert_eq!(v["detail"][0]["loc"], json!(["path", "name"]));
    }
    let long = "a".repeat(65);
    let (s, v) = gw.call("GET", &format!("/api/profiles/{long}"), None).await;
    assert_eq!(s, 422);
    assert_eq!(v["detail"][0]["type"], "string_too_long");
    // Nothing was written anywhere under the persistence directory.
    let persistence = gw.dir.path().join("persistence");
    assert!(!persistence.exists() || std::fs::read_dir(&persistence).unwrap().count() == 0);
    let (s, v) = gw.call("POST", "/api/profiles/a", Some(json!({}))).await;
    assert_eq!(s, 422);
    assert_eq!(v["detail"][0]["loc"], json!(["body", "llm"]));

    gw.save_profile("a").await;
    gw.save_profile("b").await;
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/a/rename",
            Some(json!({"new_name": "b"})),
        )
        .await;
    assert_eq!(
        (s, v),
        (409, json!({"detail": "Profile 'b' already exists"}))
    );
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/zz/rename",
            Some(json!({"new_name": "c"})),
        )
        .await;
    assert_eq!((s, v), (404, json!({"detail": "Profile 'zz' not found"})));
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/a/rename",
            Some(json!({"new_name": "a"})),
        )
        .await;
    assert_eq!(
        (s, v),
        (
            200,
            json!({"name": "a", "message": "Profile 'a' unchanged (same name)"})
        )
    );
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/a/rename",
            Some(json!({"new_name": "../c"})),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(v["detail"][0]["loc"], json!(["body", "new_name"]));
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/a/rename",
            Some(json!({"new_name": "c"})),
        )
        .await;
    assert_eq!(
        (s, v),
        (
            200,
            json!({"name": "c", "message": "Profile 'a' renamed to 'c'"})
        )
    );
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    let names: Vec<&str> = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["b", "c"]);
    gw.stop().await;
}

#[tokio::test]
async fn activation_is_tracked_through_renames_and_deletes() {
    let gw = Gw::start().await;
    let (s, v) = gw.call("POST", "/api/profiles/ghost/activate", None).await;
    assert_eq!(
        (s, v),
        (404, json!({"detail": "Profile 'ghost' not found"}))
    );
    gw.save_profile("main").await;
    let (s, v) = gw.call("POST", "/api/profiles/main/activate", None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["name"], "main");
    assert_eq!(v["llm_applied"], false);
    assert_eq!(v["message"], "Profile 'main' activated");
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(list["active_profile"], "main");
    gw.call(
        "POST",
        "/api/profiles/main/rename",
        Some(json!({"new_name": "primary"})),
    )
    .await;
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(list["active_profile"], "primary");
    gw.call("DELETE", "/api/profiles/primary", None).await;
    let (_, list) = gw.call("GET", "/api/profiles", None).await;
    assert_eq!(list["active_profile"], Value::Null);

    // With agent settings present (as the reference keeps them) the LLM is
    // applied there, encrypted.
    let settings = gw.dir.path().join("persistence").join("settings.json");
    std::fs::write(
        &settings,
        json!({"agent_settings": {"agent_kind": "openhands", "llm": {"model": "x"}}, "keep": 1})
            .to_string(),
    )
    .unwrap();
    gw.save_profile("second").await;
    let (s, v) = gw.call("POST", "/api/profiles/second/activate", None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["llm_applied"], true);
    assert_eq!(
        v["message"],
        "Profile 'second' activated and applied to current settings"
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(stored["keep"], 1);
    assert_eq!(stored["active_profile"], "second");
    assert_eq!(
        stored["agent_settings"]["llm"]["model"],
        "openai/mock-model"
    );
    assert!(looks_encrypted(
        stored["agent_settings"]["llm"]["api_key"].as_str().unwrap()
    ));
    gw.stop().await;
}

#[tokio::test]
async fn validate_pings_the_model() {
    let gw = Gw::start().await;
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/draft/validate",
            Some(json!({"llm": gw.llm()})),
        )
        .await;
    assert_eq!((s, v), (200, json!({"valid": true})));
    // Nothing was saved.
    assert!(!gw.profiles_dir().join("draft.json").exists());
    let mut unreachable = gw.llm();
    unreachable["base_url"] = json!("http://127.0.0.1:9/v1");
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/draft/validate",
            Some(json!({"llm": unreachable})),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["valid"], false, "{v}");
    assert_eq!(v["error"]["type"], "LLMServiceUnavailableError");
    assert!(!v.to_string().contains("sk-mock-123"));
    gw.stop().await;
}

#[tokio::test]
async fn the_profile_limit_is_enforced() {
    let gw = Gw::start().await;
    for i in 0..openhands_agent_server::service::profiles::MAX_PROFILES {
        std::fs::create_dir_all(gw.profiles_dir()).unwrap();
        std::fs::write(
            gw.profiles_dir().join(format!("p{i}.json")),
            json!({"model": "m", "schema_version": 1}).to_string(),
        )
        .unwrap();
    }
    let (s, v) = gw
        .call(
            "POST",
            "/api/profiles/one-more",
            Some(json!({"llm": gw.llm()})),
        )
        .await;
    assert_eq!(s, 409);
    assert_eq!(
        v["detail"],
        "Profile limit reached (50). Delete a profile before saving a new one."
    );
    // Overwriting an existing profile is still allowed.
    let (s, _) = gw
        .call("POST", "/api/profiles/p1", Some(json!({"llm": gw.llm()})))
        .await;
    assert_eq!(s, 201);
    gw.stop().await;
}
