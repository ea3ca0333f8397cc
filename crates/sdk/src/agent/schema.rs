//! Tool parameter schemas as sent to the model: every tool gains a
//! `summary` property and, for tools that can change something, a
//! `security_risk` property — both first, neither required — exactly where
//! the reference puts them.

use serde_json::{Map, Value, json};

/// Description of the `summary` property.
pub const SUMMARY_DESCRIPTION: &str =
    "A short summary (about 10 words) of what this specific call does, shown to the user.";

/// Description of the `security_risk` property.
pub const SECURITY_RISK_DESCRIPTION: &str = "Your assessment of the risk of this call: LOW (read-only or confined to the workspace), MEDIUM (changes configuration, installs packages, network access), HIGH (may destroy data, touch the system outside the workspace or expose secrets).";

/// Returns `parameters` with `security_risk` (when `with_risk`) and
/// `summary` prepended to its properties.
pub fn augment_parameters(parameters: Value, with_risk: bool) -> Value {
    let Value::Object(mut obj) = parameters else {
        return parameters;
    };
    let original = match obj.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut props = Map::new();
    if with_risk {
        props.insert(
            "security_risk".into(),
            json!({"type": "string", "description": SECURITY_RISK_DESCRIPTION, "enum": ["UNKNOWN", "LOW", "MEDIUM", "HIGH"]}),
        );
    }
    // A tool that declares its own `summary` (an MCP tool may) keeps it.
    let summary = original
        .get("summary")
        .cloned()
        .unwrap_or_else(|| json!({"type": "string", "description": SUMMARY_DESCRIPTION}));
    props.insert("summary".into(), summary);
    for (k, v) in original {
        props.entry(k).or_insert(v);
    }
    let mut out = Map::new();
    out.insert("type".into(), obj.remove("type").unwrap_or(json!("object")));
    out.insert("properties".into(), Value::Object(props));
    for (k, v) in obj {
        out.insert(k, v);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_risk_come_first_and_are_not_required() {
        let p = json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]});
        let a = augment_parameters(p.clone(), true);
        let keys: Vec<&String> = a["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["security_risk", "summary", "command"]);
        assert_eq!(a["required"], json!(["command"]));
        let b = augment_parameters(p, false);
        let keys: Vec<&String> = b["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["summary", "command"]);
    }
}
