//! Tests of configuration loading.

use super::*;
use serde_json::json;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(file: Option<Value>, pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    Config::from_sources(file, &vars(pairs))
}

fn error_vars(e: ConfigError) -> Vec<String> {
    match e {
        ConfigError::Invalid(list) => list.into_iter().map(|e| e.variable).collect(),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn defaults_match_the_reference() {
    let c = load(None, &[("HOME", "/home/u")]).unwrap().config;
    assert!(c.session_api_keys.is_empty());
    assert!(c.secret_key.is_none());
    assert_eq!(
        c.conversations_path,
        PathBuf::from("workspace/conversations")
    );
    assert_eq!(c.workspace_path, PathBuf::from("workspace/project"));
    assert_eq!(c.bash_events_dir, PathBuf::from("workspace/bash_events"));
    assert_eq!(c.max_concurrent_runs, 10);
    assert_eq!(c.conversation_idle_ttl_seconds, Some(1200.0));
    assert!(!c.deferred_init);
    assert_eq!(c.persistence_dir, PathBuf::from("/home/u/.openhands"));
}

#[test]
fn session_keys_from_indexed_json_and_legacy_variables() {
    let c = load(
        None,
        &[
            ("OH_SESSION_API_KEYS_0", "a"),
            ("OH_SESSION_API_KEYS_1", "b"),
        ],
    )
    .unwrap()
    .config;
    assert_eq!(c.session_api_keys, vec!["a", "b"]);
    assert_eq!(c.secret_key.as_ref().map(|s| s.expose()), Some("a"));
    let c = load(None, &[("OH_SESSION_API_KEYS", "[\"x\",\"\"]")])
        .unwrap()
        .config;
    assert_eq!(c.session_api_keys, vec!["x"]);
    assert_eq!(c.secret_key.as_ref().map(|s| s.expose()), Some("x"));
    let c = load(None, &[("SESSION_API_KEY", "legacy")]).unwrap().config;
    assert_eq!(c.session_api_keys, vec!["legacy"]);
    let c = load(
        None,
        &[("SESSION_API_KEY", "legacy"), ("OH_SECRET_KEY", "s")],
    )
    .unwrap()
    .config;
    assert_eq!(c.secret_key.as_ref().map(|s| s.expose()), Some("s"));
    let c = load(
        None,
        &[("OH_SESSION_API_KEYS_0", "k"), ("OH_SECRET_KEY", "  ")],
    )
    .unwrap()
    .config;
    assert_eq!(c.secret_key.as_ref().map(|s| s.expose()), Some("k"));
}

#[test]
fn env_overrides_the_file_and_is_none_clears_it() {
    let file =
        json!({"max_concurrent_runs": 3, "web_url": "http://f", "conversations_path": "/f/c"});
    let c = load(
        Some(file),
        &[("OH_MAX_CONCURRENT_RUNS", "4"), ("OH_WEB_URL_IS_NONE", "1")],
    )
    .unwrap()
    .config;
    assert_eq!(c.max_concurrent_runs, 4);
    assert_eq!(c.web_url, None);
    assert_eq!(c.conversations_path, PathBuf::from("/f/c"));
}

#[test]
fn nested_webhooks_and_telemetry() {
    let c = load(
        None,
        &[
            ("OH_WEBHOOKS_0_BASE_URL", "http://hook"),
            ("OH_WEBHOOKS_0_HEADERS", "{\"Authorization\":\"x\"}"),
            ("OH_WEBHOOKS_0_FLUSH_DELAY", "1.5"),
            ("OH_TELEMETRY_EXPORTER", "http"),
        ],
    )
    .unwrap()
    .config;
    assert_eq!(c.webhooks.len(), 1);
    let w = &c.webhooks[0];
    assert_eq!(w.base_url, "http://hook");
    assert_eq!(
        w.headers.get("Authorization").map(String::as_str),
        Some("x")
    );
    assert_eq!(w.flush_delay, 1.5);
    assert_eq!(w.event_buffer_size, 5);
    assert_eq!(w.num_retries, 3);
    assert_eq!(w.retry_delay, 5);
    assert_eq!(c.telemetry.exporter, "http");
}

#[test]
fn malformed_values_fail_naming_the_variable() {
    let e = load(None, &[("OH_MAX_CONCURRENT_RUNS", "abc")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_MAX_CONCURRENT_RUNS"]);
    let e = load(None, &[("OH_ENABLE_VSCODE", "perhaps")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_ENABLE_VSCODE"]);
    let e = load(None, &[("OH_CONVERSATION_RUNTIME", "k8s")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_CONVERSATION_RUNTIME"]);
    let e = load(None, &[("OH_MAX_CONCURRENT_RUNS", "0")]).unwrap_err();
    assert!(error_vars(e)[0].contains("OH_MAX_CONCURRENT_RUNS"));
    let e = load(
        None,
        &[
            ("OH_WEBHOOKS_0_BASE_URL", "u"),
            ("OH_WEBHOOKS_0_FLUSH_DELAY", "0"),
        ],
    )
    .unwrap_err();
    assert!(error_vars(e)[0].contains("OH_WEBHOOKS_0_FLUSH_DELAY"));
    let e = load(None, &[("OH_ALLOW_CORS_ORIGIN_REGEX", "(")]).unwrap_err();
    assert!(error_vars(e)[0].contains("OH_ALLOW_CORS_ORIGIN_REGEX"));
    let e = load(None, &[("OH_VSCODE_PORT", "70000")]).unwrap_err();
    assert!(error_vars(e)[0].contains("vscode_port"));
}

#[test]
fn unknown_settings_that_look_like_fields_fail() {
    let e = load(None, &[("OH_MAX_CONCURENT_RUNS", "5")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_MAX_CONCURENT_RUNS"]);
    let e = load(None, &[("OH_WEBHOOKS_0_BASE_UR", "x")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_WEBHOOKS_0_BASE_UR"]);
    let e = load(None, &[("OH_SESSION_API_KEYS_1", "gap")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_SESSION_API_KEYS_1"]);
    let e = load(None, &[("OH_TELEMETRY_EXPORTR", "http")]).unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_TELEMETRY_EXPORTR"]);
    let e = load(
        None,
        &[("OH_WEBHOOKS", "2"), ("OH_WEBHOOKS_0_BASE_URL", "u")],
    )
    .unwrap_err();
    assert_eq!(error_vars(e), vec!["OH_WEBHOOKS_1"]);
}

#[test]
fn unrelated_variables_only_warn() {
    let loaded = load(
        None,
        &[
            ("OH_ENABLE_VNC", "1"),
            ("OH_SOMETHING_ELSE_ENTIRELY", "1"),
            ("OH_PERSISTENCE_DIR", "/p"),
        ],
    )
    .unwrap();
    assert_eq!(loaded.config.persistence_dir, PathBuf::from("/p"));
    assert_eq!(
        loaded.warnings,
        vec!["ignoring unknown environment variable OH_SOMETHING_ELSE_ENTIRELY"]
    );
}

#[test]
fn file_values_are_type_checked() {
    let e = load(Some(json!({"max_concurrent_runs": "many"})), &[]).unwrap_err();
    assert!(error_vars(e)[0].starts_with("max_concurrent_runs"));
    let loaded = load(Some(json!({"unknown_thing": 1})), &[]).unwrap();
    assert_eq!(loaded.warnings.len(), 1);
}

#[test]
fn config_file_is_read_from_the_named_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    std::fs::write(
        &path,
        r#"{"session_api_keys":["f"],"bash_events_dir":"/b"}"#,
    )
    .unwrap();
    let c = Config::load_from_env(vars(&[(CONFIG_PATH_ENV, path.to_str().unwrap())]))
        .unwrap()
        .config;
    assert_eq!(c.session_api_keys, vec!["f"]);
    assert_eq!(c.bash_events_dir, PathBuf::from("/b"));
    std::fs::write(&path, "[1]").unwrap();
    assert!(Config::load_from_env(vars(&[(CONFIG_PATH_ENV, path.to_str().unwrap())])).is_err());
    let missing = dir.path().join("none.json");
    assert!(Config::load_from_env(vars(&[(CONFIG_PATH_ENV, missing.to_str().unwrap())])).is_ok());
}

#[test]
fn process_settings_are_read_here_and_bad_values_name_the_variable() {
    let c = load(None, &[]).unwrap().config;
    assert!(c.shell_snapshot);
    assert_eq!(c.gateway_timeout(), std::time::Duration::from_secs(120));
    assert_eq!(c.runtime_idle_timeout_seconds, None);
    let c = load(
        None,
        &[
            ("OH_SHELL_SNAPSHOT", "0"),
            ("OH_GATEWAY_TIMEOUT_SECONDS", "2.5"),
            ("OH_RUNTIME_IDLE_TIMEOUT_SECONDS", "60"),
            ("DOCKER_HOST_ADDR", "10.0.0.2"),
            ("OPENHANDS_BUILD_GIT_SHA", "abc"),
        ],
    )
    .unwrap()
    .config;
    assert!(!c.shell_snapshot);
    assert_eq!(c.gateway_timeout(), std::time::Duration::from_millis(2500));
    assert_eq!(c.runtime_idle_timeout_seconds, Some(60.0));
    assert_eq!(c.docker_host_addr.as_deref(), Some("10.0.0.2"));
    assert_eq!(c.build_git_sha.as_deref(), Some("abc"));
    // The config file can turn snapshots off too.
    let c = load(Some(json!({"shell_snapshot": false})), &[])
        .unwrap()
        .config;
    assert!(!c.shell_snapshot);
    // A bad value is an error naming the variable, never a silent default.
    for (name, value) in [
        ("OH_GATEWAY_TIMEOUT_SECONDS", "soon"),
        ("OH_GATEWAY_TIMEOUT_SECONDS", "-1"),
        ("OH_RUNTIME_IDLE_TIMEOUT_SECONDS", "0"),
        ("OH_SHELL_SNAPSHOT", "maybe"),
    ] {
        let e = load(None, &[(name, value)]).unwrap_err();
        let named = error_vars(e);
        assert!(
            named.iter().any(|v| v.contains(name)),
            "{name}={value}: {named:?}"
        );
    }
}

#[test]
fn sandbox_settings_from_env_and_file_and_bad_values_name_the_variable() {
    let c = load(None, &[]).unwrap().config;
    assert_eq!(c.sandbox, "none");
    let s = c.sandbox_config();
    assert!(s.network);
    assert_eq!(s.limits.max_processes, Some(1024));
    assert_eq!(s.limits.max_memory_bytes, Some(4096 << 20));
    assert_eq!(s.limits.max_file_size_bytes, None);
    let c = load(
        None,
        &[
            ("OH_SANDBOX", "namespaces"),
            ("OH_SANDBOX_NETWORK", "0"),
            ("OH_SANDBOX_MAX_PROCESSES", "64"),
            ("OH_SANDBOX_MAX_MEMORY_MB_IS_NONE", "1"),
            ("OH_SANDBOX_MAX_FILE_SIZE_MB", "10"),
        ],
    )
    .unwrap()
    .config;
    assert_eq!(c.sandbox, "namespaces");
    let s = c.sandbox_config();
    assert!(!s.network);
    assert_eq!(s.limits.max_processes, Some(64));
    assert_eq!(s.limits.max_memory_bytes, None);
    assert_eq!(s.limits.max_file_size_bytes, Some(10 << 20));
    let c = load(
        Some(json!({"sandbox": "namespaces", "sandbox_network": false})),
        &[],
    )
    .unwrap()
    .config;
    assert_eq!(c.sandbox, "namespaces");
    assert!(!c.sandbox_network);
    for (name, value) in [
        ("OH_SANDBOX", "bubblewrap"),
        ("OH_SANDBOX_NETWORK", "sometimes"),
        ("OH_SANDBOX_MAX_PROCESSES", "0"),
        ("OH_SANDBOX_MAX_MEMORY_MB", "lots"),
    ] {
        let e = load(None, &[(name, value)]).unwrap_err();
        let named = error_vars(e);
        assert!(
            named.iter().any(|v| v.contains(name)),
            "{name}={value}: {named:?}"
        );
    }
    assert!(load(Some(json!({"sandbox": "docker"})), &[]).is_err());
}

#[test]
fn tls_files_come_from_the_file_or_the_environment_and_go_in_pairs() {
    let c = load(
        None,
        &[
            ("OH_TLS_CERT_FILE", "/etc/oh/cert.pem"),
            ("OH_TLS_KEY_FILE", "/etc/oh/key.pem"),
        ],
    )
    .unwrap()
    .config;
    assert_eq!(c.tls_cert_file, Some(PathBuf::from("/etc/oh/cert.pem")));
    assert_eq!(c.tls_key_file, Some(PathBuf::from("/etc/oh/key.pem")));
    let c = load(
        Some(json!({"tls_cert_file": "c.pem", "tls_key_file": "k.pem"})),
        &[],
    )
    .unwrap()
    .config;
    assert_eq!(c.tls_key_file, Some(PathBuf::from("k.pem")));
    let e = load(None, &[("OH_TLS_CERT_FILE", "/etc/oh/cert.pem")]).unwrap_err();
    assert_eq!(error_vars(e), ["tls_key_file (OH_TLS_KEY_FILE)"]);
    assert!(load(None, &[]).unwrap().config.tls_cert_file.is_none());
}
