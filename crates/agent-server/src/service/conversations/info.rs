//! JSON views of a conversation: `ConversationInfo` (REST) and the
//! `full_state` snapshot (WebSocket), both built from the state JSON the SDK
//! persists in `base_state.json`, with every secret masked.

use super::stored::StoredConversation;
use openhands_protocol::conversation_info::{ConversationInfo, ConversationRuntimeInfo};
use openhands_wire::event::{ConversationStateUpdateEvent, Event, EventBody, SourceType};
use openhands_wire::secret::REDACTED;
use openhands_wire::state::ExecutionStatus;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// LLM fields holding credentials.
const LLM_SECRET_FIELDS: &[&str] = &[
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
];

/// State keys the reference does not expose (ours, kept for resuming).
const PRIVATE_STATE_KEYS: &[&str] = &["stuck_detection_thresholds"];

/// Replaces the credentials of an agent JSON (`llm` and the LLMs of a
/// condenser) with `mask`.
pub fn mask_agent(agent: &mut Value, mask: &Value) {
    if let Some(llm) = agent.get_mut("llm") {
        mask_llm(llm, mask);
    }
    if let Some(c) = agent.get_mut("condenser")
        && let Some(llm) = c.get_mut("llm")
    {
        mask_llm(llm, mask);
    }
    // Whoever holds an ACP session id can resume it (the reference
    // redacts it on every dump).
    if let Some(id) = agent.get_mut("acp_resume_session_id")
        && id.is_string()
    {
        *id = json!("**********");
    }
}

/// Hides the keys of the guardrail models in an analyzer JSON (also inside
/// an ensemble), as the agent's are.
fn mask_analyzer(analyzer: &mut Value) {
    // A monitor service's own key (`GraySwanAnalyzer.api_key`).
    mask_llm(analyzer, &Value::Null);
    if let Some(llm) = analyzer.get_mut("llm") {
        mask_llm(llm, &Value::Null);
    }
    if let Some(children) = analyzer.get_mut("analyzers").and_then(Value::as_array_mut) {
        children.iter_mut().for_each(mask_analyzer);
    }
}

/// Replaces the credentials of an LLM JSON with `mask` (absent stays absent).
pub fn mask_llm(llm: &mut Value, mask: &Value) {
    if let Some(m) = llm.as_object_mut() {
        for key in LLM_SECRET_FIELDS {
            if let Some(v) = m.get_mut(*key)
                && !v.is_null()
            {
                *v = mask.clone();
            }
        }
    }
}

/// Replaces secret values of a `SecretRegistry` JSON with `mask`.
fn mask_secret_registry(registry: &mut Value, mask: &Value) {
    let Some(sources) = registry
        .get_mut("secret_sources")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for source in sources.values_mut() {
        if let Some(m) = source.as_object_mut() {
            if let Some(v) = m.get_mut("value") {
                *v = mask.clone();
            }
            if let Some(Value::Object(headers)) = m.get_mut("headers") {
                for h in headers.values_mut() {
                    *h = mask.clone();
                }
            }
        }
    }
}

/// Drops per-LLM metrics that record nothing yet (an LLM that was never
/// called), as the reference lists only LLMs that have been used.
pub fn prune_unused_metrics(state: &mut Value) {
    let Some(usage) = state
        .get_mut("stats")
        .and_then(|s| s.get_mut("usage_to_metrics"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    usage.retain(|_, m| {
        let empty_list = |k: &str| m.get(k).and_then(Value::as_array).is_none_or(Vec::is_empty);
        let no_tokens = m.get("accumulated_token_usage").is_none_or(Value::is_null);
        let no_cost = m
            .get("accumulated_cost")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            == 0.0;
        !(no_tokens
            && no_cost
            && empty_list("costs")
            && empty_list("response_latencies")
            && empty_list("token_usages"))
    });
}

/// The `full_state` value sent over the event socket: the state with
/// secrets shown as `**********`.
pub fn ws_state_value(mut state: Value) -> Value {
    let mask = Value::String(REDACTED.into());
    prune_unused_metrics(&mut state);
    if let Some(m) = state.as_object_mut() {
        for k in PRIVATE_STATE_KEYS {
            m.remove(*k);
        }
        if let Some(agent) = m.get_mut("agent") {
            mask_agent(agent, &mask);
        }
        if let Some(reg) = m.get_mut("secret_registry") {
            mask_secret_registry(reg, &mask);
        }
        if !m.contains_key("activated_path_rules") {
            m.insert("activated_path_rules".into(), json!([]));
        }
        if !m.contains_key("head_is_empty") {
            m.insert("head_is_empty".into(), json!(false));
        }
    }
    state
}

/// A transient `ConversationStateUpdateEvent` carrying the whole state.
pub fn full_state_event(state: Value) -> Event {
    Event::with_source(
        SourceType::Environment,
        EventBody::StateUpdate(ConversationStateUpdateEvent {
            key: "full_state".into(),
            value: ws_state_value(state),
        }),
    )
}

/// `current_model_id`, `available_models` and
/// `supports_runtime_model_switch` of an ACP conversation, from what its
/// session recorded in `agent_state` (the configured `acp_model` before a
/// session started); `null`, `[]`, `false` for other agents.
fn acp_model_fields(agent: &Value, agent_state: Option<&Value>) -> (Value, Vec<Value>, bool) {
    let st = |k: &str| agent_state.and_then(|s| s.get(k)).filter(|v| !v.is_null());
    let started = st("acp_session_id").is_some();
    let current = st("acp_current_model_id")
        .cloned()
        .or_else(|| {
            (!started)
                .then(|| agent.get("acp_model").filter(|v| !v.is_null()).cloned())
                .flatten()
        })
        .unwrap_or(Value::Null);
    let models = st("acp_available_models")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let switch = st("acp_supports_runtime_model_switch")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (current, models, switch)
}

/// The value of `key` (removed from `state`) as a `T`; `default` when it is
/// missing or has another shape.
fn take<T: DeserializeOwned>(state: &mut Map<String, Value>, key: &str, default: T) -> T {
    state
        .remove(key)
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or(default)
}

/// `ConversationInfo`: the state fields, then the stored metadata, the
/// agent (credentials `null`) and the client tool registrations, in the
/// reference's key order.
pub fn conversation_info(
    state: Value,
    meta: &StoredConversation,
    sub_conversation_ids: &[Uuid],
    with_runtime_info: bool,
) -> ConversationInfo {
    let mut state = state;
    prune_unused_metrics(&mut state);
    let mut s = match state {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut agent = take(&mut s, "agent", Value::Null);
    let (current_model_id, available_models, supports_runtime_model_switch) =
        acp_model_fields(&agent, s.get("agent_state"));
    mask_agent(&mut agent, &Value::Null);
    if let Some(ctx) = agent.get_mut("agent_context")
        && let Some(skills) = ctx.get_mut("skills")
    {
        *skills = json!([]);
    }
    let mut secret_registry = take(&mut s, "secret_registry", json!({"secret_sources": {}}));
    mask_secret_registry(&mut secret_registry, &Value::Null);
    let mut security_analyzer: Option<Value> = take(&mut s, "security_analyzer", None);
    if let Some(a) = &mut security_analyzer {
        mask_analyzer(a);
    }
    ConversationInfo {
        id: take(&mut s, "id", meta.id),
        workspace: take(&mut s, "workspace", meta.workspace.clone()),
        persistence_dir: take(&mut s, "persistence_dir", None),
        max_iterations: take(&mut s, "max_iterations", i64::from(meta.max_iterations)),
        stuck_detection: take(&mut s, "stuck_detection", meta.stuck_detection),
        execution_status: take(&mut s, "execution_status", ExecutionStatus::Idle),
        confirmation_policy: take(
            &mut s,
            "confirmation_policy",
            json!({"kind": "NeverConfirm"}),
        ),
        security_analyzer,
        activated_knowledge_skills: take(&mut s, "activated_knowledge_skills", Vec::new()),
        invoked_skills: take(&mut s, "invoked_skills", Vec::new()),
        blocked_actions: take(&mut s, "blocked_actions", Map::new()),
        blocked_messages: take(&mut s, "blocked_messages", Map::new()),
        last_user_message_id: take(&mut s, "last_user_message_id", None),
        leaf_event_id: take(&mut s, "leaf_event_id", None),
        stats: take(&mut s, "stats", json!({"usage_to_metrics": {}})),
        secret_registry,
        agent_state: take(&mut s, "agent_state", Map::new()),
        hook_config: meta.hook_config.clone(),
        title: meta.title.clone(),
        metrics: meta.metrics.clone(),
        created_at: openhands_wire::time::format_utc(&meta.created_at),
        updated_at: openhands_wire::time::format_utc(&meta.updated_at),
        forked_from_conversation_id: meta.forked_from_conversation_id,
        forked_from_event_id: meta.forked_from_event_id.clone(),
        parent_conversation_id: meta.parent_conversation_id,
        sub_conversation_ids: sub_conversation_ids.to_vec(),
        tags: take(&mut s, "tags", meta.tags.clone()),
        current_model_id,
        available_models,
        supports_runtime_model_switch,
        launched_agent_profile: meta.launched_agent_profile.clone(),
        agent,
        client_tools: meta.client_tools.clone(),
        tool_module_qualnames: meta.tool_module_qualnames.clone(),
        runtime_info: with_runtime_info.then(ConversationRuntimeInfo::available),
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> Value {
        json!({
            "id": "5db4fb17-43b4-4c4e-91af-498aa756b5e5",
            "agent": {"llm": {"model": "m", "api_key": "gAAAAtoken"}, "kind": "Agent"},
            "workspace": {"working_dir": "/w", "kind": "LocalWorkspace"},
            "persistence_dir": "/c/5db4",
            "max_iterations": 500,
            "stuck_detection": true,
            "execution_status": "idle",
            "confirmation_policy": {"kind": "NeverConfirm"},
            "activated_knowledge_skills": [],
            "invoked_skills": [],
            "blocked_actions": {},
            "blocked_messages": {},
            "stats": {"usage_to_metrics": {}},
            "secret_registry": {"secret_sources": {"TOKEN": {"value": "gAAAAx", "kind": "StaticSecret"}}},
            "tags": {},
            "agent_state": {},
            "stuck_detection_thresholds": {"action_observation": 4}
        })
    }

    #[test]
    fn info_masks_secrets_and_keeps_reference_order() {
        let meta = StoredConversation::new(Uuid::new_v4(), json!({"working_dir": "/w"}));
        let info = serde_json::to_value(conversation_info(state(), &meta, &[], true)).unwrap();
        assert_eq!(info["agent"]["llm"]["api_key"], Value::Null);
        assert_eq!(
            info["secret_registry"]["secret_sources"]["TOKEN"]["value"],
            Value::Null
        );
        assert_eq!(info["runtime_info"]["runtime_status"], "available");
        assert!(info.get("stuck_detection_thresholds").is_none());
        let keys: Vec<&String> = info.as_object().unwrap().keys().collect();
        assert_eq!(keys.first().map(|k| k.as_str()), Some("id"));
        assert_eq!(keys.last().map(|k| k.as_str()), Some("runtime_info"));
        assert!(!info.to_string().contains("gAAAA"));
    }

    #[test]
    fn ws_state_masks_with_stars() {
        let v = ws_state_value(state());
        assert_eq!(v["agent"]["llm"]["api_key"], REDACTED);
        assert_eq!(
            v["secret_registry"]["secret_sources"]["TOKEN"]["value"],
            REDACTED
        );
        assert_eq!(v["head_is_empty"], false);
        assert!(v.get("stuck_detection_thresholds").is_none());
        let ev = full_state_event(state());
        assert!(ev.is_transient());
    }
}
