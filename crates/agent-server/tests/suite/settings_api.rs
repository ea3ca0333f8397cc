//! `GET|PATCH /api/settings` and the settings form schemas: defaults,
//! merges, secrets encrypted at rest and exposed only on request,
//! persistence across restarts, validation failures that name the field,
//! and the stored `load_memory` reaching a new conversation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn idle(_: &std::path::Path) -> Script {
    Script::from_turns([Turn::text("ok")]).with_toolless_reply(Turn::text("A title"))
}

async fn expose(env: &Env, mode: &str) -> (u16, Value) {
    let resp = env
        .client
        .get(env.url("/api/settings"))
        .header("X-Session-API-Key", KEY)
        .header("X-Expose-Secrets", mode)
        .send()
        .await
        .unwrap();
    let s = resp.status().as_u16();
    (s, resp.json().await.unwrap_or_default())
}

fn settings_file(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.dir.path().join("persistence/settings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn settings_default_merge_persist_and_keep_secrets_encrypted() {
    let mut env = Env::start(idle).await;
    let (s, fresh) = env.get("/api/settings").await;
    assert_eq!(s, 200, "{fresh}");
    assert_eq!(fresh["llm_api_key_is_set"], false);
    assert_eq!(fresh["agent_settings"]["schema_version"], 9);
    assert_eq!(fresh["agent_settings"]["condenser"]["max_size"], 240);
    assert_eq!(fresh["conversation_settings"]["max_iterations"], 500);
    assert_eq!(fresh["misc_settings"], json!({}));

    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({
                "agent_settings_diff": {"llm": {"model": "openai/gpt-4o", "api_key": "sk-settings-7f3a", "timeout": "45"}},
                "conversation_settings_diff": {"max_iterations": 42},
                "misc_settings_diff": {"ui": {"theme": "dark", "keep": 1}}
            })),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["agent_settings"]["llm"]["api_key"], "**********");
    assert_eq!(body["agent_settings"]["llm"]["model"], "openai/gpt-4o");
    assert_eq!(body["agent_settings"]["llm"]["timeout"], 45);
    assert_eq!(body["llm_api_key_is_set"], true);
    assert_eq!(body["conversation_settings"]["max_iterations"], 42);

    // A nested null removes one misc entry; other keys stay.
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"misc_settings_diff": {"ui": {"keep": null}}})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["misc_settings"], json!({"ui": {"theme": "dark"}}));
    assert_eq!(body["agent_settings"]["llm"]["model"], "openai/gpt-4o");

    // On disk: the reference's document, the key encrypted.
    let stored = settings_file(&env);
    assert_eq!(stored["schema_version"], 6);
    let key = stored["agent_settings"]["llm"]["api_key"].as_str().unwrap();
    assert!(key.starts_with("gAAAA"), "{key}");
    assert!(!stored.to_string().contains("sk-settings-7f3a"));

    let (s, plain) = expose(&env, "plaintext").await;
    assert_eq!(s, 200);
    assert_eq!(
        plain["agent_settings"]["llm"]["api_key"],
        "sk-settings-7f3a"
    );
    let (s, sealed) = expose(&env, "encrypted").await;
    assert_eq!(s, 200);
    let token = sealed["agent_settings"]["llm"]["api_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(token.starts_with("gAAAA"));
    let (s, bad) = expose(&env, "bogus").await;
    assert_eq!(s, 400);
    assert_eq!(
        bad["detail"],
        "Invalid X-Expose-Secrets header value: 'bogus'. Valid values are: 'encrypted', 'plaintext'."
    );

    // A token posted back is opened, not stored as the key.
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": {"llm": {"api_key": token}}})),
        )
        .await;
    assert_eq!(s, 200);
    env.restart().await;
    let (_, plain) = expose(&env, "plaintext").await;
    assert_eq!(
        plain["agent_settings"]["llm"]["api_key"],
        "sk-settings-7f3a"
    );
    assert_eq!(plain["conversation_settings"]["max_iterations"], 42);
    assert_eq!(
        plain["agent_settings"]["agent_context"]["current_datetime"],
        fresh_or_stamp(&stored)
    );

    // Switching the agent kind starts from that kind's defaults.
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": {"agent_kind": "acp", "acp_server": "codex"}})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["agent_settings"]["acp_server"], "codex");
    assert!(body["agent_settings"].get("llm").is_none());
    assert_eq!(body["llm_api_key_is_set"], false);
    env.stop().await;
}

fn fresh_or_stamp(stored: &Value) -> Value {
    stored["agent_settings"]["agent_context"]["current_datetime"].clone()
}

#[tokio::test]
async fn settings_patch_refuses_bad_input_and_changes_nothing() {
    let env = Env::start(idle).await;
    let (s, body) = env.call("PATCH", "/api/settings", Some(json!({}))).await;
    assert_eq!(s, 400);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("At least one of agent_settings_diff")
    );
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": 5})),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["type"], "dict_type");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent_settings_diff"])
    );
    let (s, body) = env.raw("PATCH", "/api/settings", "[1]").await;
    assert_eq!(s, 422, "{body}");

    for (diff, field) in [
        (
            json!({"agent_settings_diff": {"tool_concurrency_limit": "many"}}),
            "agent_settings.tool_concurrency_limit",
        ),
        (
            json!({"agent_settings_diff": {"condenser": {"max_size": -1}}}),
            "agent_settings.condenser.max_size",
        ),
        (
            json!({"conversation_settings_diff": {"confirmation_mode": null}}),
            "conversation_settings.confirmation_mode",
        ),
        (
            json!({"conversation_settings_diff": {"max_iterations": "x"}, "misc_settings_diff": {"a": 1}}),
            "conversation_settings.max_iterations",
        ),
    ] {
        let (s, body) = env.call("PATCH", "/api/settings", Some(diff.clone())).await;
        assert_eq!(s, 422, "{diff}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.starts_with("Settings validation failed"), "{detail}");
        assert!(detail.contains(field), "{detail}");
    }
    // Nothing was written by the refused updates.
    assert!(!env.dir.path().join("persistence/settings.json").exists());

    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_profile": "bad name"})),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["type"], "string_pattern_mismatch");
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_profile": "nope"})),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Profile 'nope' not found"}))
    );
    let id = "8f0c2b7e-1d2a-4c3b-9e4f-5a6b7c8d9e0f";
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_agent_profile_id": id})),
        )
        .await;
    assert_eq!(
        (s, body),
        (
            404,
            json!({"detail": format!("Agent profile with id '{id}' not found")})
        )
    );
    env.stop().await;
}

#[tokio::test]
async fn active_profile_applies_the_profile_llm() {
    let env = Env::start(idle).await;
    let (s, body) = env
        .post(
            "/api/profiles/fast",
            json!({"llm": {"model": "openai/fast-model", "api_key": "sk-fast"}}),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_profile": "fast"})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["active_profile"], "fast");
    assert_eq!(body["agent_settings"]["llm"]["model"], "openai/fast-model");
    assert_eq!(body["llm_api_key_is_set"], true);
    env.stop().await;
}

#[tokio::test]
async fn stored_load_memory_reaches_new_conversations() {
    let env = Env::start(idle).await;
    let info = env.create(json!({})).await;
    assert_ne!(
        info["agent"]["agent_context"]["load_memory"], true,
        "{info}"
    );
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": {"agent_context": {"load_memory": true}}})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let info = env.create(json!({})).await;
    assert_eq!(
        info["agent"]["agent_context"]["load_memory"], true,
        "{info}"
    );
    env.stop().await;
}

#[tokio::test]
async fn settings_schemas_describe_the_forms() {
    let env = Env::start(idle).await;
    let (s, agent) = env.get("/api/settings/agent-schema").await;
    assert_eq!(s, 200);
    assert_eq!(agent["model_name"], "AgentSettings");
    let keys: Vec<&str> = agent["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "general",
            "llm",
            "agent_context",
            "condenser",
            "verification",
            "acp"
        ]
    );
    let (s, conv) = env.get("/api/settings/conversation-schema").await;
    assert_eq!(s, 200);
    assert_eq!(conv["sections"][0]["fields"][0]["key"], "max_iterations");
    env.stop().await;
}

#[tokio::test]
async fn llm_catalogue_lists_the_model_table_that_prices_calls() {
    let env = Env::start(idle).await;
    let (s, body) = env.get("/api/llm/providers").await;
    assert_eq!(s, 200);
    let providers: Vec<String> = serde_json::from_value(body["providers"].clone()).unwrap();
    assert!(providers.windows(2).all(|w| w[0] < w[1]), "{providers:?}");
    for p in ["anthropic", "openai", "openrouter", "litellm_proxy"] {
        assert!(providers.iter().any(|x| x == p), "{p} missing");
    }
    let (s, body) = env.get("/api/llm/models?provider=anthropic").await;
    assert_eq!(s, 200);
    let models: Vec<String> = serde_json::from_value(body["models"].clone()).unwrap();
    assert!(!models.is_empty());
    for model in &models {
        // Every listed model is priced by the LLM crate from the same table.
        let config = openhands_wire::LlmConfig::new(format!("anthropic/{model}"));
        let usage = openhands_wire::metrics::TokenUsage {
            prompt_tokens: 1000,
            completion_tokens: 100,
            ..Default::default()
        };
        assert!(
            openhands_llm::model_info::cost(&config, &usage) > 0.0,
            "{model}"
        );
        assert!(
            openhands_llm::model_info::context_window(&config) > 0,
            "{model}"
        );
    }
    let (_, all) = env.get("/api/llm/models").await;
    assert!(all["models"].as_array().unwrap().len() > models.len());
    assert!(
        all["models"]
            .as_array()
            .unwrap()
            .contains(&json!("gemini/gemini-2.5-pro"))
    );
    let (_, none) = env.get("/api/llm/models?provider=nope").await;
    assert_eq!(none, json!({"models": []}));
    let (s, verified) = env.get("/api/llm/models/verified").await;
    assert_eq!(s, 200);
    let anthropic = verified["models"]["anthropic"].as_array().unwrap();
    assert!(
        anthropic
            .iter()
            .all(|m| models.contains(&m.as_str().unwrap().to_string()))
    );
    env.stop().await;
}

#[tokio::test]
async fn agent_profiles_seed_default_save_rename_activate_and_delete() {
    let env = Env::start(idle).await;
    // A configured settings LLM is mirrored into a `default` LLM profile.
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": {"llm": {"model": "openai/gpt-5", "api_key": "sk-seed"}}})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, list) = env.get("/api/agent-profiles").await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["profiles"].as_array().unwrap().len(), 1);
    let seeded = &list["profiles"][0];
    assert_eq!(seeded["name"], "default");
    assert_eq!(seeded["llm_profile_ref"], "default");
    assert_eq!(list["active_agent_profile_id"], seeded["id"]);
    let (s, llm) = env.get("/api/profiles/default").await;
    assert_eq!(s, 200, "{llm}");
    assert_eq!(llm["config"]["model"], "openai/gpt-5");

    let (s, body) = env
        .post(
            "/api/agent-profiles/a1",
            json!({"llm_profile_ref": "default", "secret_refs": ["ONLY"], "name": "ignored"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (
            201,
            json!({"name": "a1", "message": "Agent profile 'a1' saved"})
        )
    );
    let (_, first) = env.get("/api/agent-profiles/a1").await;
    assert_eq!(first["profile"]["name"], "a1");
    assert_eq!(first["profile"]["revision"], 0);
    assert_eq!(first["profile"]["condenser"]["max_size"], 240);
    let (s, _) = env
        .post("/api/agent-profiles/a1", json!({"llm_profile_ref": "other", "tool_concurrency_limit": 3, "secret_refs": ["ONLY"]}))
        .await;
    assert_eq!(s, 201);
    let (_, second) = env.get("/api/agent-profiles/a1").await;
    assert_eq!(second["profile"]["id"], first["profile"]["id"]);
    assert_eq!(second["profile"]["revision"], 1);
    assert_eq!(second["profile"]["tool_concurrency_limit"], 3);
    let stored = env.dir.path().join("persistence/agent-profiles/a1.json");
    assert!(stored.is_file());

    let (s, body) = env
        .post("/api/agent-profiles/a1", json!({"bogus": 1}))
        .await;
    assert_eq!(s, 422);
    assert_eq!(
        body["detail"],
        json!([
            {"loc": ["openhands", "llm_profile_ref"], "type": "missing", "msg": "Field required"},
            {"loc": ["openhands", "bogus"], "type": "extra_forbidden", "msg": "Extra inputs are not permitted"}
        ])
    );
    let (s, _) = env.post("/api/agent-profiles/bad name", json!({})).await;
    assert_eq!(s, 422);
    let (s, body) = env.get("/api/agent-profiles/nope").await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Agent profile 'nope' not found"}))
    );

    let (s, body) = env
        .post(
            "/api/agent-profiles/a1/rename",
            json!({"new_name": "default"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (
            409,
            json!({"detail": "Agent profile 'default' already exists"})
        )
    );
    let (s, body) = env
        .post("/api/agent-profiles/a1/rename", json!({"new_name": "b1"}))
        .await;
    assert_eq!(
        (s, body),
        (
            200,
            json!({"name": "b1", "message": "Agent profile 'a1' renamed to 'b1'"})
        )
    );

    let id = second["profile"]["id"].as_str().unwrap().to_string();
    let (s, body) = env
        .post(&format!("/api/agent-profiles/{id}/activate"), json!({}))
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["agent_settings_applied"], false);
    let (_, settings) = env.get("/api/settings").await;
    assert_eq!(settings["active_agent_profile_id"], id.as_str());
    assert_eq!(settings["agent_settings"]["llm"]["model"], "openai/gpt-5");
    let (s, body) = env
        .post("/api/agent-profiles/nope/activate", json!({}))
        .await;
    assert_eq!(
        (s, body),
        (
            404,
            json!({"detail": "Agent profile with id 'nope' not found"})
        )
    );
    // The settings accept a pointer to a stored profile.
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_agent_profile_id": id})),
        )
        .await;
    assert_eq!(s, 200);

    // Secrets listed for a profile are limited to its secret_refs.
    for name in ["ONLY", "OTHER"] {
        let (s, _) = env
            .call(
                "PUT",
                "/api/settings/secrets",
                Some(json!({"name": name, "value": "v"})),
            )
            .await;
        assert_eq!(s, 200);
    }
    let (_, scoped) = env
        .get(&format!("/api/settings/secrets?agent_profile_id={id}"))
        .await;
    assert_eq!(
        scoped,
        json!({"secrets": [{"name": "ONLY", "description": null}]})
    );

    // Deleting the active profile moves the pointer back to `default`.
    let (s, body) = env.call("DELETE", "/api/agent-profiles/b1", None).await;
    assert_eq!(
        (s, body),
        (
            200,
            json!({"name": "b1", "message": "Agent profile 'b1' deleted"})
        )
    );
    let (_, settings) = env.get("/api/settings").await;
    assert_eq!(settings["active_agent_profile_id"], seeded["id"]);
    let (s, _) = env.call("DELETE", "/api/agent-profiles/b1", None).await;
    assert_eq!(s, 200);
    env.stop().await;
}

#[tokio::test]
async fn meta_profiles_save_activate_route_and_delete() {
    let env = Env::start(idle).await;
    let (s, body) = env.post("/api/meta-profiles/m1", json!({})).await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["type"], "missing");
    let (s, body) = env
        .post("/api/meta-profiles/m1", json!({"classifier_model": "c"}))
        .await;
    assert_eq!(s, 422);
    assert_eq!(
        body["detail"][0]["msg"],
        "Value error, A meta-profile needs either classes or a prompt_template to route."
    );
    let (s, _) = env
        .post(
            "/api/meta-profiles/m1",
            json!({"classifier_model": "c", "prompt_template": "no slot"}),
        )
        .await;
    assert_eq!(s, 422);
    let config =
        json!({"classifier_model": "c", "classes": [{"description": "ui", "model": "vis"}]});
    let (s, body) = env.post("/api/meta-profiles/m1", config).await;
    assert_eq!(
        (s, body),
        (
            201,
            json!({"name": "m1", "message": "Meta-profile 'm1' saved"})
        )
    );
    let (_, list) = env.get("/api/meta-profiles").await;
    assert_eq!(
        list,
        json!({"meta_profiles": [{"name": "m1", "classifier_model": "c", "num_classes": 1}], "active_meta_profile": null})
    );
    let (_, detail) = env.get("/api/meta-profiles/m1").await;
    assert_eq!(detail["config"]["prompt_template"], Value::Null);
    assert!(
        env.dir
            .path()
            .join("persistence/meta-profiles/m1.json")
            .is_file()
    );

    let (s, body) = env.post("/api/meta-profiles/m1/activate", json!({})).await;
    assert_eq!((s, body["applied"].clone()), (200, json!(true)));
    let (_, settings) = env.get("/api/settings").await;
    assert_eq!(settings["active_meta_profile"], "m1");
    assert_eq!(
        settings["agent_settings"]["enable_classify_and_switch_llm_tool"],
        true
    );
    assert_eq!(
        settings["agent_settings"]["meta_profile"]["classifier_model"],
        "c"
    );
    // The settings pointer accepts a stored meta-profile and refuses others.
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_meta_profile": "m1"})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"active_meta_profile": "zz"})),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Meta-profile 'zz' not found"}))
    );
    let (s, body) = env.post("/api/meta-profiles/zz/activate", json!({})).await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Meta-profile 'zz' not found"}))
    );

    let (s, _) = env.call("DELETE", "/api/meta-profiles/m1", None).await;
    assert_eq!(s, 200);
    let (_, settings) = env.get("/api/settings").await;
    assert_eq!(settings["active_meta_profile"], Value::Null);
    assert_eq!(settings["agent_settings"]["meta_profile"], Value::Null);
    assert_eq!(
        settings["agent_settings"]["enable_classify_and_switch_llm_tool"],
        false
    );

    // ACP agent settings cannot route: nothing is recorded.
    let (s, _) = env
        .post(
            "/api/meta-profiles/m2",
            json!({"classifier_model": "c", "prompt_template": "{{ instance_text }}"}),
        )
        .await;
    assert_eq!(s, 201);
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings",
            Some(json!({"agent_settings_diff": {"agent_kind": "acp"}})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, body) = env.post("/api/meta-profiles/m2/activate", json!({})).await;
    assert_eq!((s, body["applied"].clone()), (200, json!(false)));
    let (_, settings) = env.get("/api/settings").await;
    assert_eq!(settings["active_meta_profile"], Value::Null);
    env.stop().await;
}

#[tokio::test]
async fn provider_connections_keep_keys_encrypted_and_refuse_deleting_used_ones() {
    let env = Env::start(idle).await;
    let (s, body) = env
        .post(
            "/api/llm/provider-connections",
            json!({"display_name": "Team"}),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "api_key"]));
    let (s, body) = env
        .post(
            "/api/llm/provider-connections",
            json!({"display_name": "Team", "api_key": "**********"}),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["type"], "value_error");
    let (s, body) = env
        .post(
            "/api/llm/provider-connections",
            json!({"display_name": "Team", "api_key": "k", "bogus": 1}),
        )
        .await;
    assert_eq!(
        (s, body["detail"][0]["type"].clone()),
        (422, json!("extra_forbidden"))
    );

    let (s, created) = env
        .post(
            "/api/llm/provider-connections",
            json!({"display_name": "Team", "api_key": "sk-shared-91", "base_url": "http://127.0.0.1:9/v1"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["provider"], "custom");
    assert_eq!(created["api_key_set"], true);
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    let file = env
        .dir
        .path()
        .join("persistence/provider-connections/provider_connections.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("sk-shared-91") && text.contains("gAAAA"),
        "{text}"
    );
    let (_, list) = env.get("/api/llm/provider-connections").await;
    assert_eq!(list, json!([created]));

    // A profile linked to the connection gets its key.
    let (s, _) = env
        .post(
            "/api/profiles/linked",
            json!({"llm": {"model": "openai/gpt-5", "provider_connection_id": id}}),
        )
        .await;
    assert_eq!(s, 201);
    let (_, profiles) = env.get("/api/profiles").await;
    assert_eq!(profiles["profiles"][0]["api_key_set"], true, "{profiles}");
    let (s, body) = env
        .call(
            "DELETE",
            &format!("/api/llm/provider-connections/{id}"),
            None,
        )
        .await;
    assert_eq!(s, 409);
    assert_eq!(
        body["detail"],
        "Provider connection cannot be deleted while it is referenced by LLM profile(s): linked. Update those references before deleting it."
    );

    let path = format!("/api/llm/provider-connections/{id}");
    let (s, body) = env.call("PATCH", &path, Some(json!({}))).await;
    assert_eq!(
        (s, body),
        (
            422,
            json!({"detail": "Provide at least one provider connection field to update"})
        )
    );
    let (s, body) = env
        .call("PATCH", &path, Some(json!({"api_key": null})))
        .await;
    assert_eq!(
        (s, body),
        (
            422,
            json!({"detail": "api_key cannot be cleared; provide a new key to rotate it"})
        )
    );
    let (s, body) = env
        .call("PATCH", &path, Some(json!({"display_name": null})))
        .await;
    assert_eq!(
        (s, body["detail"][0]["msg"].clone()),
        (
            422,
            json!("Value error, display_name cannot be set to null")
        )
    );
    let (s, body) = env
        .call(
            "PATCH",
            &path,
            Some(json!({"api_key": "sk-rotated", "display_name": "Renamed"})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["display_name"], "Renamed");
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("sk-rotated")
    );
    let (s, body) = env
        .call(
            "PATCH",
            "/api/llm/provider-connections/nope",
            Some(json!({"provider": "x"})),
        )
        .await;
    assert_eq!(
        (s, body),
        (
            404,
            json!({"detail": "Provider connection 'nope' not found"})
        )
    );

    let (s, _) = env.call("DELETE", "/api/profiles/linked", None).await;
    assert_eq!(s, 200);
    let (s, body) = env.call("DELETE", &path, None).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["api_key_set"], false);
    assert_eq!(body["display_name"], "Renamed");
    let (_, list) = env.get("/api/llm/provider-connections").await;
    assert_eq!(list, json!([]));
    env.stop().await;
}
