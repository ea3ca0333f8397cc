//! The parts of `agent_settings` (`OpenHandsAgentSettings`) beyond the LLM,
//! the tools and the MCP servers: agent context, persona, tool concurrency
//! and condenser are applied as the reference's `create_agent` does; the
//! critic is built from `verification` as the reference's `build_critic`;
//! `enable_classify_and_switch_llm_tool` adds the `route_task_to_model` tool
//! configured by `active_meta_profile`, `meta_profile` and
//! `meta_profile_llms` as the reference's `create_agent` does.

use openhands_protocol::conversations::{loc, redact_value};
use openhands_protocol::validation::ValidationIssue;
use openhands_wire::agent::AgentSpec;
use serde_json::{Map, Value, json};

/// Defaults of the reference's `LLMSummarizingCondenserSettings`.
const CONDENSER_DEFAULTS: [(&str, f64); 5] = [
    ("max_size", 240.0),
    ("keep_first", 2.0),
    ("minimum_progress", 0.1),
    ("hard_context_reset_max_retries", 5.0),
    ("hard_context_reset_context_scaling", 0.8),
];

/// Applies `settings`' agent context, persona, tool concurrency limit and
/// condenser to `spec` (built from the same settings' LLM and tools).
pub fn apply(
    settings: &Map<String, Value>,
    spec: &mut AgentSpec,
) -> Result<(), Box<ValidationIssue>> {
    routing(settings, spec)?;
    if let Some(ctx) = present(settings, "agent_context") {
        if !ctx.is_object() {
            return Err(dict_type(&["agent_context"], ctx));
        }
        spec.agent_context = Some(ctx.clone());
    }
    if let Some(p) = present(settings, "persona") {
        let Some(p) = p.as_str() else {
            return Err(issue(
                "string_type",
                &["persona"],
                "Input should be a valid string",
                p,
            ));
        };
        spec.persona = Some(p.to_string());
    }
    if let Some(n) = present(settings, "tool_concurrency_limit") {
        spec.tool_concurrency_limit = n
            .as_u64()
            .filter(|n| *n >= 1)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                issue(
                    "greater_than_equal",
                    &["tool_concurrency_limit"],
                    "Input should be an integer greater than or equal to 1",
                    n,
                )
            })?;
    }
    // Absent, the reference's default settings apply (its field has a
    // default), not the preset's condenser.
    let c = present(settings, "condenser")
        .cloned()
        .unwrap_or_else(|| json!({}));
    spec.condenser = condenser(&c, spec)?;
    if let Some(v) = present(settings, "verification") {
        spec.critic = critic(v, spec)?;
    }
    Ok(())
}

/// The agent's critic from `VerificationSettings`, as the reference's
/// `build_critic`: none when disabled or without any key (the critic's own
/// or the LLM's), else an `APIBasedCritic` with the settings' mode,
/// refinement and service overrides.
fn critic(v: &Value, spec: &AgentSpec) -> Result<Option<Value>, Box<ValidationIssue>> {
    let Some(obj) = v.as_object() else {
        return Err(dict_type(&["verification"], v));
    };
    let llm_key = spec.llm.api_key.as_ref().map(|k| k.expose().to_string());
    let Some(out) =
        openhands_sdk::critic::settings::critic_from_verification(obj, llm_key.as_deref())
    else {
        return Ok(None);
    };
    openhands_sdk::critic::Critic::from_json(&out).map_err(|e| {
        let message = e.to_string();
        Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent_settings", "verification"]),
                format!("Value error, {message}"),
                redact_value(v.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )
    })?;
    Ok(Some(out))
}

/// The agent's condenser from `CondenserSettings`: none when disabled or
/// `no_op`, else an `LLMSummarizingCondenser` over the agent's LLM (usage
/// `condenser`) with the settings' limits over the reference's defaults.
fn condenser(c: &Value, spec: &AgentSpec) -> Result<Option<Value>, Box<ValidationIssue>> {
    let Some(obj) = c.as_object() else {
        return Err(dict_type(&["condenser"], c));
    };
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(issue(
                "bool_type",
                &["condenser", "enabled"],
                "Input should be a valid boolean",
                other,
            ));
        }
    };
    match obj.get("condenser_kind").and_then(Value::as_str) {
        None | Some("llm_summarizing") => {}
        Some("no_op") => return Ok(None),
        Some(_) => {
            return Err(issue(
                "literal_error",
                &["condenser", "condenser_kind"],
                "Input should be 'llm_summarizing' or 'no_op'",
                &obj["condenser_kind"],
            ));
        }
    }
    if !enabled {
        return Ok(None);
    }
    let mut out = openhands_tools::presets::default_condenser(&spec.llm);
    let Some(target) = out.as_object_mut() else {
        return Ok(None);
    };
    for (key, default) in CONDENSER_DEFAULTS {
        let value = match obj.get(key) {
            None | Some(Value::Null) => json!(default),
            Some(v) if v.is_number() => v.clone(),
            Some(v) => {
                return Err(issue(
                    "float_type",
                    &["condenser", key],
                    "Input should be a valid number",
                    v,
                ));
            }
        };
        target.insert(key.to_string(), normalize_int(key, value));
    }
    if let Some(t) = obj.get("max_tokens").filter(|v| !v.is_null()) {
        target.insert("max_tokens".into(), t.clone());
    }
    let out = Value::Object(target.clone());
    openhands_sdk::condenser::Condenser::validate(&out).map_err(|e| {
        let message = e.to_string();
        Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent_settings", "condenser"]),
                format!("Value error, {message}"),
                redact_value(c.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )
    })?;
    Ok(Some(out))
}

/// Integer limits stay integers (`240`, not `240.0`).
fn normalize_int(key: &str, v: Value) -> Value {
    let integral = matches!(
        key,
        "max_size" | "keep_first" | "hard_context_reset_max_retries"
    );
    match v.as_f64() {
        Some(f) if integral && f.fract() == 0.0 && f >= 0.0 => json!(f as u64),
        _ => v,
    }
}

/// The routing tool (`ClassifyAndSwitchLLMTool` with the meta-profile
/// parameters) when `enable_classify_and_switch_llm_tool` is on, replacing
/// any other spec or default of it. The meta-profile fields are checked
/// either way (the reference's model validates them).
fn routing(
    settings: &Map<String, Value>,
    spec: &mut AgentSpec,
) -> Result<(), Box<ValidationIssue>> {
    use openhands_sdk::route_task::{CLASS, NAME};
    let enabled = match present(settings, "enable_classify_and_switch_llm_tool") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(issue(
                "bool_type",
                &["enable_classify_and_switch_llm_tool"],
                "Input should be a valid boolean",
                other,
            ));
        }
    };
    let mut params = Map::new();
    match present(settings, "active_meta_profile") {
        None => {}
        Some(Value::String(name)) if !name.is_empty() => {
            params.insert("active_meta_profile".into(), json!(name));
        }
        Some(Value::String(_)) => {}
        Some(other) => {
            return Err(issue(
                "string_type",
                &["active_meta_profile"],
                "Input should be a valid string",
                other,
            ));
        }
    }
    if let Some(m) = present(settings, "meta_profile") {
        if !m.is_object() {
            return Err(dict_type(&["meta_profile"], m));
        }
        let parsed = openhands_sdk::meta_profile::MetaProfile::from_json(m)
            .map_err(|e| value_error(&["meta_profile"], &e.to_string(), m))?;
        params.insert(
            "meta_profile".into(),
            serde_json::to_value(parsed).unwrap_or(Value::Null),
        );
    }
    match present(settings, "meta_profile_llms") {
        None => {}
        Some(Value::Object(llms)) => {
            for (name, llm) in llms {
                if let Err(e) = serde_json::from_value::<openhands_wire::LlmConfig>(llm.clone()) {
                    return Err(value_error(
                        &["meta_profile_llms", name],
                        &e.to_string(),
                        llm,
                    ));
                }
            }
            if !llms.is_empty() {
                params.insert("meta_profile_llms".into(), Value::Object(llms.clone()));
            }
        }
        Some(other) => return Err(dict_type(&["meta_profile_llms"], other)),
    }
    if enabled {
        spec.include_default_tools
            .retain(|d| d != CLASS && d != NAME);
        spec.tools.retain(|t| t.name != CLASS && t.name != NAME);
        let mut tool = openhands_wire::tool::ToolSpec::named(CLASS);
        tool.params = params;
        spec.tools.push(tool);
    }
    Ok(())
}

/// A `value_error` at `agent_settings.<field>`.
fn value_error(field: &[&str], message: &str, input: &Value) -> Box<ValidationIssue> {
    let mut at = vec!["body", "agent_settings"];
    at.extend_from_slice(field);
    Box::new(
        ValidationIssue::new(
            "value_error",
            loc(&at),
            format!("Value error, {message}"),
            redact_value(input.clone()),
        )
        .with_ctx(json!({ "error": message })),
    )
}

/// A field that is present and not null.
fn present<'a>(settings: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    settings.get(key).filter(|v| !v.is_null())
}

/// A validation issue at `agent_settings.<field>`.
fn issue(kind: &str, field: &[&str], message: &str, input: &Value) -> Box<ValidationIssue> {
    let mut at = vec!["body", "agent_settings"];
    at.extend_from_slice(field);
    Box::new(ValidationIssue::new(
        kind,
        loc(&at),
        message,
        redact_value(input.clone()),
    ))
}

/// `agent_settings.<field>` is not an object.
fn dict_type(field: &[&str], input: &Value) -> Box<ValidationIssue> {
    issue(
        "dict_type",
        field,
        "Input should be a valid dictionary",
        input,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::LlmConfig;

    fn spec() -> AgentSpec {
        openhands_tools::presets::get_default_agent(LlmConfig::new("openai/m"), false)
    }

    fn settings(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn context_persona_concurrency_and_condenser_are_applied() {
        let mut s = spec();
        apply(
            &settings(json!({
                "agent_context": {"user_message_suffix": "Be brief."},
                "persona": "reviewer",
                "tool_concurrency_limit": 3,
                "condenser": {"max_size": 50, "max_tokens": 1000}
            })),
            &mut s,
        )
        .unwrap();
        assert_eq!(s.agent_context.unwrap()["user_message_suffix"], "Be brief.");
        assert_eq!(s.persona.as_deref(), Some("reviewer"));
        assert_eq!(s.tool_concurrency_limit, 3);
        let c = s.condenser.unwrap();
        assert_eq!(c["kind"], "LLMSummarizingCondenser");
        assert_eq!(c["max_size"], 50);
        assert_eq!(c["keep_first"], 2);
        assert_eq!(c["max_tokens"], 1000);
        assert_eq!(c["llm"]["usage_id"], "condenser");
    }

    #[test]
    fn without_condenser_settings_the_references_defaults_apply() {
        let mut s = spec();
        apply(&Map::new(), &mut s).unwrap();
        let c = s.condenser.unwrap();
        assert_eq!(
            (c["max_size"].clone(), c["keep_first"].clone()),
            (json!(240), json!(2))
        );
    }

    #[test]
    fn verification_builds_the_references_api_critic() {
        let mut s = spec();
        apply(
            &settings(
                json!({"verification": {"critic_enabled": true, "critic_api_key": "ck",
                "critic_mode": "all_actions", "enable_iterative_refinement": true,
                "critic_threshold": 0.8, "max_refinement_iterations": 2,
                "critic_server_url": "http://127.0.0.1:9/vllm"}}),
            ),
            &mut s,
        )
        .unwrap();
        let c = s.critic.unwrap();
        assert_eq!(c["kind"], "APIBasedCritic");
        assert_eq!(c["api_key"], "ck");
        assert_eq!(c["mode"], "all_actions");
        assert_eq!(c["server_url"], "http://127.0.0.1:9/vllm");
        assert_eq!(
            c["iterative_refinement"],
            json!({"success_threshold": 0.8, "max_iterations": 2})
        );
        // Disabled, or no key at all: no critic.
        for v in [
            json!({"critic_enabled": false, "critic_api_key": "ck"}),
            json!({"critic_enabled": true}),
        ] {
            let mut s = spec();
            apply(&settings(json!({ "verification": v })), &mut s).unwrap();
            assert!(s.critic.is_none());
        }
    }

    #[test]
    fn a_disabled_or_no_op_condenser_removes_it() {
        for c in [
            json!({"enabled": false}),
            json!({"condenser_kind": "no_op"}),
        ] {
            let mut s = spec();
            assert!(s.condenser.is_some());
            apply(&settings(json!({ "condenser": c })), &mut s).unwrap();
            assert!(s.condenser.is_none());
        }
    }

    #[test]
    fn bad_values_and_unsupported_settings_name_the_field() {
        let cases = [
            (
                json!({"tool_concurrency_limit": 0}),
                json!(["body", "agent_settings", "tool_concurrency_limit"]),
            ),
            (
                json!({"condenser": {"condenser_kind": "fancy"}}),
                json!(["body", "agent_settings", "condenser", "condenser_kind"]),
            ),
            (
                json!({"condenser": {"max_size": "big"}}),
                json!(["body", "agent_settings", "condenser", "max_size"]),
            ),
            (
                json!({"verification": {"critic_enabled": true, "critic_api_key": "k",
                    "critic_mode": "sometimes"}}),
                json!(["body", "agent_settings", "verification"]),
            ),
            (
                json!({"enable_classify_and_switch_llm_tool": "yes"}),
                json!([
                    "body",
                    "agent_settings",
                    "enable_classify_and_switch_llm_tool"
                ]),
            ),
            (
                json!({"active_meta_profile": 3}),
                json!(["body", "agent_settings", "active_meta_profile"]),
            ),
            (
                json!({"meta_profile": {"classifier_model": "c", "prompt_template": "no slot"}}),
                json!(["body", "agent_settings", "meta_profile"]),
            ),
            (
                json!({"meta_profile_llms": {"judge": {"model": 5}}}),
                json!(["body", "agent_settings", "meta_profile_llms", "judge"]),
            ),
        ];
        for (input, want) in cases {
            let e = apply(&settings(input.clone()), &mut spec()).unwrap_err();
            assert_eq!(serde_json::to_value(&e).unwrap()["loc"], want, "{input}");
        }
        // Defaults that change nothing are accepted.
        let mut s = spec();
        let before = s.tools.clone();
        apply(
            &settings(json!({"verification": {"critic_enabled": false}, "enable_classify_and_switch_llm_tool": false, "active_meta_profile": "r", "meta_profile_llms": {}})),
            &mut s,
        )
        .unwrap();
        assert_eq!(s.tools, before, "routing off adds no tool");
    }

    #[test]
    fn routing_adds_the_tool_with_the_meta_profile_parameters() {
        let mut s = spec();
        s.include_default_tools
            .push("ClassifyAndSwitchLLMTool".into());
        apply(
            &settings(json!({
                "enable_classify_and_switch_llm_tool": true,
                "active_meta_profile": "route",
                "meta_profile": {"classifier_model": "judge", "classes": [{"description": "d", "model": "m"}]},
                "meta_profile_llms": {"judge": {"model": "openai/gpt-4o-mini"}}
            })),
            &mut s,
        )
        .unwrap();
        assert!(
            !s.include_default_tools
                .iter()
                .any(|d| d == "ClassifyAndSwitchLLMTool")
        );
        let tools: Vec<_> = s
            .tools
            .iter()
            .filter(|t| t.name == "ClassifyAndSwitchLLMTool")
            .collect();
        assert_eq!(tools.len(), 1);
        let p = &tools[0].params;
        assert_eq!(p["active_meta_profile"], "route");
        assert_eq!(p["meta_profile"]["classifier_model"], "judge");
        assert_eq!(p["meta_profile"]["prompt_template"], Value::Null);
        assert_eq!(
            p["meta_profile_llms"]["judge"]["model"],
            "openai/gpt-4o-mini"
        );
    }
}
