use super::*;
use openhands_workspace::exec::EnvPolicy;
use serde_json::json;

fn config(v: serde_json::Value) -> AcpAgentConfig {
    AcpAgentConfig::from_agent(v.as_object().unwrap()).unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn file_secrets_are_seeded_private_and_pointed_at() {
    let tmp = tempfile::tempdir().unwrap();
    let root = acp_root(Some(tmp.path()), Path::new("/unused"));
    assert_eq!(root, tmp.path().join("acp"));
    let cfg = config(json!({"acp_command": ["custom-server"]}));
    let mut env = EnvPolicy::default().child_env();
    let secrets = |n: &str| match n {
        "CODEX_AUTH_JSON" => Some("{\"tokens\": {}}".to_string()),
        "GOOGLE_APPLICATION_CREDENTIALS_JSON" => Some("{\"sa\": 1}".to_string()),
        _ => None,
    };
    let files = materialize(&cfg, &root, &secrets, &mut env).unwrap();
    assert_eq!(files.len(), 2);
    let codex = root.join("codex/auth.json");
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), "{\"tokens\": {}}");
    assert_eq!(mode(&codex), 0o600);
    assert_eq!(mode(&root.join("codex")), 0o700);
    assert_eq!(mode(&root), 0o700);
    assert_eq!(
        env.get("CODEX_HOME"),
        Some(root.join("codex").to_str().unwrap())
    );
    assert_eq!(
        env.get("GOOGLE_APPLICATION_CREDENTIALS"),
        Some(
            root.join("gemini-cli/gcloud-credentials.json")
                .to_str()
                .unwrap()
        )
    );
    // Seed-if-absent: a file the server rewrote is kept on the next start.
    std::fs::write(&codex, "refreshed").unwrap();
    std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o644)).unwrap();
    materialize(&cfg, &root, &secrets, &mut env).unwrap();
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), "refreshed");
    assert_eq!(mode(&codex), 0o600);
}

#[test]
fn a_known_provider_gets_only_its_own_reserved_secrets() {
    let codex = config(json!({"acp_command": ["x"], "acp_server": "codex"}));
    let names: Vec<String> = active_file_secrets(&codex)
        .into_iter()
        .map(|s| s.secret_name)
        .collect();
    assert_eq!(names, ["CODEX_AUTH_JSON"]);
    let all = [
        "CODEX_AUTH_JSON".to_string(),
        "PI_AUTH_JSON".to_string(),
        "OTHER".to_string(),
    ];
    assert_eq!(
        present_file_secret_names(&codex, all.iter())
            .into_iter()
            .collect::<Vec<_>>(),
        ["CODEX_AUTH_JSON"]
    );
    let custom = config(json!({"acp_command": ["x"]}));
    assert_eq!(present_file_secret_names(&custom, all.iter()).len(), 2);
    let by_command = config(json!({"acp_command": ["npx", "@google/gemini-cli@0.46.0", "--acp"]}));
    assert_eq!(
        active_file_secrets(&by_command)[0].secret_name,
        "GOOGLE_APPLICATION_CREDENTIALS_JSON"
    );
}

#[test]
fn the_data_directory_is_isolated_per_conversation_for_known_providers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = acp_root(Some(tmp.path()), Path::new("/unused"));
    let mut env = EnvPolicy::default().child_env();
    let off = config(json!({"acp_command": ["codex-acp"]}));
    isolate_data_dir(&off, &root, &mut env).unwrap();
    assert!(!root.exists());
    let on = config(json!({"acp_command": ["/opt/bin/codex-acp"], "acp_isolate_data_dir": true}));
    isolate_data_dir(&on, &root, &mut env).unwrap();
    assert_eq!(
        env.get("CODEX_HOME"),
        Some(root.join("codex").to_str().unwrap())
    );
    assert_eq!(mode(&root.join("codex")), 0o700);
    let unknown = config(json!({"acp_command": ["my-server"], "acp_isolate_data_dir": true}));
    let mut env2 = EnvPolicy::default().child_env();
    isolate_data_dir(&unknown, &root, &mut env2).unwrap();
    assert_eq!(env2.get("CODEX_HOME"), None);
}
