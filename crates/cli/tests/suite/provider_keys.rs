//! `openhands run` with only a provider's own key variable set (as LiteLLM
//! reads them for the reference): `ANTHROPIC_API_KEY` for an Anthropic
//! model, `OPENAI_API_KEY` for an OpenAI one; the key reaches the provider
//! in that provider's header.

use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::json;
use std::path::Path;
use std::process::Command;

fn run_with(
    model: &str,
    vars: &[(&str, &str)],
    base_url: &str,
    root: &Path,
) -> std::process::Output {
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("openhands"));
    cmd.env("LLM_MODEL", model)
        .env("LLM_BASE_URL", base_url)
        .env("OPENHANDS_CONVERSATIONS_DIR", root.join("conversations"))
        .env("HOME", root.join("home"))
        .env_remove("LLM_API_KEY")
        .env_remove("OH_PERSISTENCE_DIR")
        .env_remove("LOG_LEVEL");
    for provider_var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_BASE",
    ] {
        cmd.env_remove(provider_var);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["run", "--workspace"])
        .arg(&ws)
        .arg("say done")
        .output()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn run_works_with_only_the_providers_own_key() {
    let rt = runtime();
    for (model, var, header, expected) in [
        (
            "anthropic/claude-sonnet-4-5",
            "ANTHROPIC_API_KEY",
            "x-api-key",
            "sk-ant-only",
        ),
        (
            "openai/gpt-4o",
            "OPENAI_API_KEY",
            "authorization",
            "Bearer sk-oai-only",
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        let script =
            Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "done"}))]);
        let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
        let key = expected.trim_start_matches("Bearer ");
        let out = run_with(model, &[(var, key)], &server.base_url(), root.path());
        assert!(
            out.status.success(),
            "{model}: stdout {}\nstderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let calls = server.completion_requests();
        assert!(!calls.is_empty(), "{model}: no call reached the server");
        for call in &calls {
            assert_eq!(call.header(header), Some(expected), "{model}: {call:?}");
        }
        rt.block_on(server.shutdown());
    }
}

#[test]
fn the_missing_key_message_names_the_providers_variable() {
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("openhands"));
    let out = cmd
        .env("LLM_MODEL", "anthropic/claude-sonnet-4-5")
        .env("HOME", root.path())
        .env_remove("LLM_API_KEY")
        .env_remove("LLM_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_BASE")
        .args(["run", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("set LLM_API_KEY (or ANTHROPIC_API_KEY)"),
        "{err}"
    );
}
