//! The critic of an agent's `VerificationSettings` (`agent_settings.
//! verification` in `settings.json` and start requests), as the
//! reference's `build_critic`: none when the critic is off or no key is
//! available (the critic's own `critic_api_key`, else the LLM's), else an
//! `APIBasedCritic` with the settings' mode, refinement bound and service
//! overrides. Shared by the agent server and the command line.

use serde_json::{Map, Value, json};

/// The critic JSON (`kind: APIBasedCritic`) for `verification`, or `None`.
/// `llm_api_key` is the agent LLM's key, used when the settings carry none.
/// The result still has to pass [`super::Critic::from_json`].
pub fn critic_from_verification(
    verification: &Map<String, Value>,
    llm_api_key: Option<&str>,
) -> Option<Value> {
    let flag = |k: &str| {
        verification
            .get(k)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    if !flag("critic_enabled") {
        return None;
    }
    let key = verification
        .get("critic_api_key")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .or(llm_api_key)
        .filter(|k| !k.is_empty())?;
    let present = |k: &str| verification.get(k).cloned().filter(|x| !x.is_null());
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIBasedCritic"));
    out.insert("api_key".into(), json!(key));
    out.insert(
        "mode".into(),
        present("critic_mode").unwrap_or_else(|| json!("finish_and_message")),
    );
    if flag("enable_iterative_refinement") {
        out.insert(
            "iterative_refinement".into(),
            json!({"success_threshold": present("critic_threshold").unwrap_or(json!(0.6)),
                   "max_iterations": present("max_refinement_iterations").unwrap_or(json!(3))}),
        );
    }
    for (from, to) in [
        ("critic_server_url", "server_url"),
        ("critic_model_name", "model_name"),
    ] {
        if let Some(x) = present(from) {
            out.insert(to.into(), x);
        }
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn builds_the_references_api_critic() {
        let v = obj(
            json!({"critic_enabled": true, "enable_iterative_refinement": true,
            "critic_threshold": 0.8, "critic_server_url": "http://x/vllm", "critic_model_name": null}),
        );
        let c = critic_from_verification(&v, Some("llm-key")).unwrap();
        assert_eq!(
            c,
            json!({"kind": "APIBasedCritic", "api_key": "llm-key", "mode": "finish_and_message",
                "iterative_refinement": {"success_threshold": 0.8, "max_iterations": 3},
                "server_url": "http://x/vllm"})
        );
        assert!(super::super::Critic::from_json(&c).is_ok());
        let own = obj(json!({"critic_enabled": true, "critic_api_key": "ck"}));
        assert_eq!(
            critic_from_verification(&own, None).unwrap()["api_key"],
            "ck"
        );
        assert!(critic_from_verification(&obj(json!({"critic_enabled": true})), None).is_none());
        assert!(
            critic_from_verification(&obj(json!({"critic_enabled": false})), Some("k")).is_none()
        );
    }
}
