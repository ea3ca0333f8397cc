//! `${VAR}` and `${VAR:-default}` placeholders in an MCP configuration,
//! expanded as the reference does before its servers start: a
//! conversation secret first, then the (policy-filtered) environment, then
//! the default; an unknown variable without default stays as written.

use serde_json::{Map, Value};

/// `config` with every placeholder in its strings expanded by `lookup`
/// (secret, then environment); keys are left alone.
pub fn expand_variables(
    config: &Map<String, Value>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Map<String, Value> {
    config
        .iter()
        .map(|(k, v)| (k.clone(), expand_value(v, lookup)))
        .collect()
}

fn expand_value(v: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Value {
    match v {
        Value::String(s) => Value::String(expand_str(s, lookup)),
        Value::Array(a) => Value::Array(a.iter().map(|x| expand_value(x, lookup)).collect()),
        Value::Object(m) => Value::Object(expand_variables(m, lookup)),
        other => other.clone(),
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Expands the placeholders of one string.
pub fn expand_str(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (is_name(name), is_name(name).then(|| lookup(name)).flatten()) {
            (true, Some(value)) => out.push_str(&value),
            (true, None) if default.is_some() => out.push_str(default.unwrap_or_default()),
            _ => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `value` with `$NAME` and `${NAME}` references replaced where `lookup`
/// knows the name (the reference's expansion of conversation secrets in
/// MCP tool arguments); other references stay as written.
pub fn expand_references(value: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Value {
    match value {
        Value::String(s) => Value::String(expand_refs_str(s, lookup)),
        Value::Array(a) => Value::Array(a.iter().map(|x| expand_references(x, lookup)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), expand_references(v, lookup)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn expand_refs_str(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let (name, consumed) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .char_indices()
                .find(|(i, c)| {
                    !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
                })
                .map_or(after.len(), |(i, _)| i);
            (&after[..end], end)
        };
        match (is_name(name), is_name(name).then(|| lookup(name)).flatten()) {
            (true, Some(v)) => {
                out.push_str(&v);
                rest = &after[consumed..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_then_environment_then_defaults() {
        let lookup = |n: &str| match n {
            "TOKEN" => Some("t0k".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        let cfg = json!({"s": {
            "command": "${HOME}/bin/srv",
            "args": ["--token=${TOKEN}", "${MISSING:-fallback}", "${MISSING}", "${not valid}", "$TOKEN"],
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "timeout": 3
        }});
        let out = expand_variables(cfg.as_object().unwrap(), &lookup);
        assert_eq!(
            Value::Object(out),
            json!({"s": {
                "command": "/home/u/bin/srv",
                "args": ["--token=t0k", "fallback", "${MISSING}", "${not valid}", "$TOKEN"],
                "headers": {"Authorization": "Bearer t0k"},
                "timeout": 3
            }})
        );
        assert_eq!(expand_str("a ${UNCLOSED", &lookup), "a ${UNCLOSED");
    }

    #[test]
    fn secret_references_in_arguments() {
        let lookup = |n: &str| (n == "TOKEN").then(|| "t0k".to_string());
        let v = json!({"q": "a $TOKEN b ${TOKEN}c $OTHER ${OTHER} $ 5$ $1", "n": [1, "$TOKEN_X"]});
        assert_eq!(
            expand_references(&v, &lookup),
            json!({"q": "a t0k b t0kc $OTHER ${OTHER} $ 5$ $1", "n": [1, "$TOKEN_X"]})
        );
    }
}
