//! `GET /api/settings/agent-schema` and `conversation-schema`: the form
//! description of the settings, built from the field table
//! ([`super::fields`]) and the defaults, in the reference's shape
//! (`model_name`, `sections[].fields[]` with `key`, `label`, `value_type`,
//! `default`, `prominence`, `depends_on`, `secret`, `choices`, `variant`).

use super::defaults;
use super::fields::{self, Field, Section};
use serde_json::{Map, Value, json};

fn default_of(doc: &Map<String, Value>, key: &str) -> Value {
    let mut cur = Value::Object(doc.clone());
    for part in key.split('.') {
        cur = match cur.get(part) {
            Some(v) => v.clone(),
            None => return Value::Null,
        };
    }
    cur
}

fn field_json(f: &Field, section_label: &str, default: Value, variant: Option<&str>) -> Value {
    json!({
        "key": f.key,
        "label": f.label,
        "description": f.description,
        "section": f.section,
        "section_label": section_label,
        "value_type": f.kind.name(),
        "default": default,
        "prominence": f.prominence.name(),
        "depends_on": f.depends_on,
        "secret": f.secret,
        "choices": f.choices.iter().filter(|_| f.list_choices).map(|c| json!({"value": c, "label": c})).collect::<Vec<_>>(),
        "variant": variant,
    })
}

/// Fields, the defaults they read from, and their variant.
type Group<'a> = (&'a [Field], &'a Map<String, Value>, Option<&'a str>);

fn build(model_name: &str, sections: &[Section], groups: &[Group<'_>]) -> Value {
    let mut out = Vec::new();
    for (key, label, section_variant) in sections {
        let mut list = Vec::new();
        for (table, doc, variant) in groups {
            for f in table.iter().filter(|f| f.section == *key) {
                // A field shared by both variants is listed once.
                if list.iter().any(|v: &Value| v["key"] == f.key) {
                    continue;
                }
                list.push(field_json(f, label, default_of(doc, f.key), *variant));
            }
        }
        if !list.is_empty() {
            out.push(
                json!({"key": key, "label": label, "fields": list, "variant": section_variant}),
            );
        }
    }
    json!({"model_name": model_name, "sections": out})
}

/// The agent settings form (both variants, fields tagged by variant).
pub fn agent() -> Value {
    let openhands = defaults::openhands_agent();
    let acp = defaults::acp_agent();
    let acp_only: Vec<Field> = fields::ACP_AGENT
        .iter()
        .filter(|f| {
            f.section == "acp" && !matches!(f.key, "acp_isolate_data_dir" | "acp_file_secrets")
        })
        .cloned()
        .collect();
    build(
        "AgentSettings",
        &fields::AGENT_SECTIONS,
        &[
            (fields::OPENHANDS_AGENT, &openhands, Some("openhands")),
            (&acp_only, &acp, Some("acp")),
        ],
    )
}

/// The conversation settings form.
pub fn conversation() -> Value {
    let doc = defaults::conversation();
    build(
        "ConversationSettings",
        &fields::CONVERSATION_SECTIONS,
        &[(fields::CONVERSATION, &doc, None)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_schema_lists_llm_fields_with_defaults_and_secrets() {
        let s = agent();
        let llm = s["sections"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["key"] == "llm"))
            .cloned()
            .unwrap_or_default();
        let key = llm["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|x| x["key"] == "llm.api_key"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(key["secret"], true);
        assert_eq!(key["variant"], "openhands");
        let retries = llm["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|x| x["key"] == "llm.num_retries"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(retries["default"], 5);
        assert_eq!(retries["value_type"], "integer");
        let acp = s["sections"]
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(acp["variant"], "acp");
        assert_eq!(acp["fields"][0]["default"], "claude-code");
    }

    #[test]
    fn conversation_schema_has_the_runtime_choices() {
        let s = conversation();
        assert_eq!(s["model_name"], "ConversationSettings");
        let runtime = &s["sections"][2];
        assert_eq!(runtime["key"], "runtime");
        assert_eq!(runtime["fields"][0]["choices"][1]["value"], "worktree");
        assert_eq!(s["sections"][0]["fields"][0]["default"], 500);
    }
}
