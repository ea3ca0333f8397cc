//! The cost a conversation records equals LiteLLM's: for every model the
//! parity sample holds (76, over 20 providers), a local conversation whose
//! LLM answers one call of 100 prompt + 10 completion tokens records in
//! its stats (`base_state.json`: `stats.usage_to_metrics.agent`) the cost
//! `litellm.cost_per_token` gives for those counts. The expected numbers
//! come from `compat/scripts/litellm_expected.py --costs-only` in the
//! compat venv (`compat/setup.sh`); without the venv the test says loudly
//! that it did not run.

use crate::common::{finish, persisted, registry};
use openhands_llm::Llm;
use openhands_sdk::{Agent, LocalConversation};
use openhands_testkit::{Script, ScriptedLlm};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

fn expected() -> Option<Vec<(String, f64)>> {
    let venv = std::env::var_os("COMPAT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/openhands-rs/compat-venv"));
    let python = venv.join("bin/python");
    if !python.is_file() {
        eprintln!(
            "SKIPPED conversation cost parity: no compat venv at {} (run compat/setup.sh)",
            venv.display()
        );
        return None;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(python)
        .arg(root.join("compat/scripts/litellm_expected.py"))
        .arg("--costs-only")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "litellm_expected.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(
        doc["costs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                (c["prompt"].as_u64(), c["completion"].as_u64()) == (Some(100), Some(10))
                    && c["cache_read"] == 0
                    && c["cache_write"] == 0
                    && c["reasoning"] == 0
            })
            .map(|c| {
                (
                    c["model"].as_str().unwrap().to_string(),
                    c["cost"].as_f64().unwrap(),
                )
            })
            .collect(),
    )
}

/// Runs one conversation on `model` (one call reporting 100 + 10 tokens,
/// the scripted LLM's default usage) and reads the cost it recorded.
async fn recorded_cost(model: &str) -> f64 {
    let mut config = LlmConfig::new(model);
    config.usage_id = "agent".into();
    let backend = Arc::new(ScriptedLlm::new(Script::from_turns(vec![finish("done")])));
    let llm = Llm::with_backend(config.clone(), backend);
    let agent = Agent::with_llm(
        AgentSpec::new(config, vec![ToolSpec::named("echo")]),
        llm,
        registry(),
    );
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let conversation =
        LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    conversation.send_message("go").unwrap();
    conversation.run().await.unwrap();
    let state: Value = serde_json::from_slice(
        &std::fs::read(
            root.path()
                .join(conversation.id().simple().to_string())
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let agent = &state["stats"]["usage_to_metrics"]["agent"];
    let usage = &agent["accumulated_token_usage"];
    assert_eq!(
        (&usage["prompt_tokens"], &usage["completion_tokens"]),
        (&Value::from(100), &Value::from(10)),
        "{model}: {usage}"
    );
    agent["accumulated_cost"].as_f64().unwrap()
}

#[tokio::test]
async fn recorded_costs_equal_litellms_for_the_sampled_models() {
    let Some(expected) = expected() else { return };
    assert!(
        expected.len() >= 50,
        "only {} models sampled",
        expected.len()
    );
    let mut wrong = Vec::new();
    for (model, want) in &expected {
        let got = recorded_cost(model).await;
        if (got - want).abs() > 1e-12_f64.max(want.abs() * 1e-9) {
            wrong.push(format!("{model}: recorded {got}, litellm {want}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        expected.len(),
        wrong.join("\n")
    );
}
