//! Turns a merged settings object into its canonical form: every known
//! field present (defaults filled in), values checked and coerced as the
//! reference's models do (lax numbers, enums, bounds), unknown keys of the
//! known sections dropped. A failure names the field.

use super::defaults;
use super::fields::{self, Field, Kind, Min};
use serde_json::{Map, Number, Value};

/// A value the settings refuse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}`: {reason}")]
pub struct Invalid {
    /// Dotted path (`agent_settings.llm.timeout`).
    pub key: String,
    /// What is wrong.
    pub reason: Refusal,
}

/// What is wrong with a value (the text follows the field's name).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// `null` where the field is not nullable.
    #[error("must not be null")]
    Null,
    /// A value of another type (`a string`, `an integer`, `a list`, ...).
    #[error("must be {0}")]
    Type(&'static str),
    /// Below an inclusive minimum.
    #[error("must be at least {0}")]
    AtLeast(f64),
    /// At or below an exclusive minimum.
    #[error("must be greater than {0}")]
    GreaterThan(f64),
    /// Above the maximum.
    #[error("must be at most {0}")]
    AtMost(f64),
    /// Not one of the field's choices.
    #[error("must be one of {}", .0.join(", "))]
    OneOf(&'static [&'static str]),
    /// A string that breaks the field's own format rule (the rule).
    #[error("{0}")]
    Format(&'static str),
}

fn invalid(key: impl Into<String>, reason: Refusal) -> Invalid {
    Invalid {
        key: key.into(),
        reason,
    }
}

/// Keys of the agent settings that hold free-form maps (never pruned).
const FREE_MAPS: [&str; 6] = [
    "mcp_config",
    "meta_profile_llms",
    "capability_overrides",
    "litellm_extra_body",
    "extra_headers",
    "secrets",
];

/// Optional keys the models have without a default in the dump.
const OPTIONAL: [&str; 4] = [
    "agent_context.current_datetime",
    "llm.fallback_strategy",
    "agent_context.memory_context",
    "llm.profile_id",
];

/// Checks and coerces one value against its field.
pub fn check(field: &Field, value: &Value) -> Result<Value, Refusal> {
    if value.is_null() {
        return if field.nullable {
            Ok(Value::Null)
        } else {
            Err(Refusal::Null)
        };
    }
    let out = match field.kind {
        Kind::Str => match value {
            Value::String(_) => value.clone(),
            _ => return Err(Refusal::Type("a string")),
        },
        Kind::Bool => match value {
            Value::Bool(_) => value.clone(),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Value::Bool(true),
                "false" | "0" | "no" | "off" => Value::Bool(false),
                _ => return Err(Refusal::Type("true or false")),
            },
            Value::Number(n) if n.as_i64() == Some(0) => Value::Bool(false),
            Value::Number(n) if n.as_i64() == Some(1) => Value::Bool(true),
            _ => return Err(Refusal::Type("true or false")),
        },
        Kind::Int => {
            let n = number_of(value).ok_or(Refusal::Type("an integer"))?;
            if n.fract() != 0.0 || !n.is_finite() || n.abs() > 9.0e15 {
                return Err(Refusal::Type("an integer"));
            }
            Value::Number(Number::from(n as i64))
        }
        Kind::Num => {
            let n = number_of(value).ok_or(Refusal::Type("a number"))?;
            Number::from_f64(n)
                .map(Value::Number)
                .ok_or(Refusal::Type("a finite number"))?
        }
        Kind::Obj => match value {
            Value::Object(_) => value.clone(),
            _ => return Err(Refusal::Type("an object")),
        },
        Kind::Arr => match value {
            Value::Array(_) => value.clone(),
            _ => return Err(Refusal::Type("a list")),
        },
    };
    if let Some(n) = out.as_f64() {
        match field.min {
            Some(Min::Ge(m)) if n < m => return Err(Refusal::AtLeast(m)),
            Some(Min::Gt(m)) if n <= m => return Err(Refusal::GreaterThan(m)),
            _ => {}
        }
        if let Some(m) = field.max
            && n > m
        {
            return Err(Refusal::AtMost(m));
        }
    }
    if !field.choices.is_empty()
        && let Some(s) = out.as_str()
        && !field.choices.contains(&s)
    {
        return Err(Refusal::OneOf(field.choices));
    }
    Ok(out)
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

fn same_type(a: &Value, b: &Value) -> bool {
    matches!(
        (a, b),
        (Value::String(_), Value::String(_))
            | (Value::Bool(_), Value::Bool(_))
            | (Value::Number(_), Value::Number(_))
            | (Value::Array(_), Value::Array(_))
            | (Value::Object(_), Value::Object(_))
    )
}

/// Fills `value` (an object at `path`) from `default`: known keys checked,
/// unknown keys dropped (except free-form maps and optional keys).
fn shape(
    path: &str,
    value: &Map<String, Value>,
    default: &Map<String, Value>,
    table: &[Field],
    root: &str,
) -> Result<Map<String, Value>, Invalid> {
    let mut out = Map::new();
    for (key, dflt) in default {
        let sub = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let given = value.get(key);
        let field = fields::find(table, &sub);
        let v = match (given, field) {
            (None, _) => dflt.clone(),
            (Some(g), Some(f)) => check(f, g).map_err(|r| invalid(format!("{root}.{sub}"), r))?,
            (Some(Value::Object(g)), None)
                if dflt.is_object() && !FREE_MAPS.contains(&key.as_str()) =>
            {
                let d = dflt.as_object().cloned().unwrap_or_default();
                Value::Object(shape(&sub, g, &d, table, root)?)
            }
            (Some(g), None) if dflt.is_null() || same_type(g, dflt) => g.clone(),
            (Some(Value::Null), None) => dflt.clone(),
            (Some(_), None) => {
                let what = match dflt {
                    Value::Object(_) => "an object",
                    Value::Array(_) => "a list",
                    Value::String(_) => "a string",
                    Value::Bool(_) => "true or false",
                    _ => "a number",
                };
                return Err(invalid(format!("{root}.{sub}"), Refusal::Type(what)));
            }
        };
        out.insert(key.clone(), v);
    }
    for (key, v) in value {
        let sub = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        if !out.contains_key(key) && OPTIONAL.contains(&sub.as_str()) && !v.is_null() {
            out.insert(key.clone(), v.clone());
        }
    }
    Ok(out)
}

/// The canonical agent settings for a merged object (either variant).
pub fn agent(merged: &Map<String, Value>) -> Result<Map<String, Value>, Invalid> {
    let kind = match merged.get("agent_kind") {
        None | Some(Value::Null) => "openhands",
        Some(Value::String(s)) if s == "openhands" || s == "acp" => s.as_str(),
        Some(_) => {
            return Err(invalid(
                "agent_settings.agent_kind",
                Refusal::OneOf(&["openhands", "acp"]),
            ));
        }
    };
    let (mut default, table) = if kind == "acp" {
        (defaults::acp_agent(), fields::ACP_AGENT)
    } else {
        (defaults::openhands_agent(), fields::OPENHANDS_AGENT)
    };
    if kind == "openhands" {
        // The condenser's defaults depend on its kind.
        let condenser_kind = merged
            .get("condenser")
            .and_then(|c| c.get("condenser_kind"))
            .cloned();
        match condenser_kind {
            Some(Value::String(k)) if k == "no_op" => {
                default.insert(
                    "condenser".into(),
                    serde_json::json!({"condenser_kind": "no_op", "enabled": true}),
                );
            }
            Some(Value::String(k)) if k == "llm_summarizing" => {}
            None | Some(Value::Null) => {}
            Some(_) => {
                return Err(invalid(
                    "agent_settings.condenser.condenser_kind",
                    Refusal::OneOf(&["llm_summarizing", "no_op"]),
                ));
            }
        }
    }
    let mut out = shape("", merged, &default, table, "agent_settings")?;
    out.insert(
        "schema_version".into(),
        Value::from(defaults::AGENT_SCHEMA_VERSION),
    );
    out.insert("agent_kind".into(), Value::String(kind.into()));
    if let Some(Value::Object(servers)) = out.get("mcp_config") {
        for (name, server) in servers {
            if !server.is_object() {
                return Err(invalid(
                    format!("agent_settings.mcp_config.{name}"),
                    Refusal::Type("an object"),
                ));
            }
        }
    }
    Ok(out)
}

/// The canonical conversation settings for a merged object.
pub fn conversation(merged: &Map<String, Value>) -> Result<Map<String, Value>, Invalid> {
    let default = defaults::conversation();
    let mut out = shape(
        "",
        merged,
        &default,
        fields::CONVERSATION,
        "conversation_settings",
    )?;
    out.insert(
        "schema_version".into(),
        Value::from(defaults::CONVERSATION_SCHEMA_VERSION),
    );
    let prefix_ok = out
        .get("worktree_branch_prefix")
        .and_then(Value::as_str)
        .is_none_or(|p| {
            p.is_empty()
                || (p.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c)))
        });
    if !prefix_ok {
        return Err(invalid(
            "conversation_settings.worktree_branch_prefix",
            Refusal::Format(
                "must be letters, digits, '.', '_', '/' or '-', not starting with punctuation",
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
