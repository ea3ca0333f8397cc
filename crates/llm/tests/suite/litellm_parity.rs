//! Our price table answers as LiteLLM does: for models sampled across
//! providers, the cost of the same token counts equals
//! `litellm.cost_per_token`, and the model lists equal the reference agent
//! server's. The expected numbers come from `compat/scripts/litellm_expected.py`
//! run in the compat venv (`compat/setup.sh`); without the venv the test
//! says loudly that it did not run.

use openhands_llm::catalog;
use openhands_llm::model_info;
use openhands_wire::LlmConfig;
use openhands_wire::metrics::TokenUsage;
use serde_json::Value;
use std::path::PathBuf;

fn expected() -> Option<Value> {
    let venv = std::env::var_os("COMPAT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/openhands-rs/compat-venv"));
    let python = venv.join("bin/python");
    if !python.is_file() {
        eprintln!(
            "SKIPPED litellm parity: no compat venv at {} (run compat/setup.sh)",
            venv.display()
        );
        return None;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(python)
        .arg(root.join("compat/scripts/litellm_expected.py"))
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "litellm_expected.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn costs_model_lists_and_providers_equal_litellm() {
    let Some(exp) = expected() else { return };
    let costs = exp["costs"].as_array().unwrap();
    let mut models: Vec<&str> = costs.iter().map(|c| c["model"].as_str().unwrap()).collect();
    models.dedup();
    assert!(models.len() >= 50, "only {} models sampled", models.len());
    let mut wrong = Vec::new();
    for c in costs {
        let model = c["model"].as_str().unwrap();
        let n = |k: &str| c[k].as_u64().unwrap();
        let usage = TokenUsage {
            prompt_tokens: n("prompt"),
            completion_tokens: n("completion"),
            cache_read_tokens: n("cache_read"),
            cache_write_tokens: n("cache_write"),
            reasoning_tokens: n("reasoning"),
            ..TokenUsage::default()
        };
        let want = c["cost"].as_f64().unwrap();
        let got = model_info::cost(&LlmConfig::new(model), &usage);
        if (got - want).abs() > 1e-9_f64.max(want.abs() * 1e-9) {
            wrong.push(format!(
                "{model} (key {}) {}/{}/{}/{}/{}: ours {got}, litellm {want}",
                c["key"],
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        costs.len(),
        wrong.join("\n")
    );

    for (provider, want) in exp["models"].as_object().unwrap() {
        let want: Vec<String> = serde_json::from_value(want.clone()).unwrap();
        let got = catalog::model_names((!provider.is_empty()).then_some(provider.as_str()));
        if got != want {
            let extra: Vec<_> = got.iter().filter(|m| !want.contains(m)).take(10).collect();
            let missing: Vec<_> = want.iter().filter(|m| !got.contains(m)).take(10).collect();
            panic!("models of `{provider}` differ: extra {extra:?}, missing {missing:?}");
        }
    }
    let providers: Vec<String> = serde_json::from_value(exp["providers"].clone()).unwrap();
    assert_eq!(catalog::providers(), providers);
}
