//! The reference's `OH_*` environment encoding, turned into JSON.
//!
//! Every configuration field maps to `OH_<FIELD>` (upper case). Nested
//! models add `_<FIELD>` (`OH_TELEMETRY_EXPORTER`), lists take items
//! `OH_X_0`, `OH_X_1`, … or a JSON value in `OH_X` (a JSON number `N` means
//! "N items, given as `OH_X_0..N-1`"), dictionaries and whole models may be
//! given as JSON, and `OH_X_IS_NONE=1` writes an explicit `null`.
//!
//! Unlike the reference, which silently drops values it cannot place, this
//! parser reports every variable it could not use: a malformed value, a
//! variable under a known field that matches no sub-field or list slot, or a
//! near miss of a field name are errors naming the variable.

use super::schema::{Field, Kind};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Marker for a list slot declared (`OH_X=3`) but not yet filled.
const HOLE: &str = "\u{0}openhands-env-unfilled-slot\u{0}";

/// A configuration problem, naming the variable or field responsible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    /// The environment variable (or config-file field path) at fault.
    pub variable: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.variable, self.message)
    }
}

/// Reads the environment following a schema and records which variables it used.
pub struct EnvReader<'a> {
    vars: &'a BTreeMap<String, String>,
    used: BTreeSet<String>,
    errors: Vec<EnvError>,
}

impl<'a> EnvReader<'a> {
    /// A reader over `vars`.
    pub fn new(vars: &'a BTreeMap<String, String>) -> Self {
        Self {
            vars,
            used: BTreeSet::new(),
            errors: Vec::new(),
        }
    }

    fn get(&mut self, key: &str) -> Option<&'a str> {
        let v = self.vars.get(key)?;
        self.used.insert(key.to_string());
        Some(v.as_str())
    }

    fn has_prefix(&self, prefix: &str) -> bool {
        self.vars
            .range(prefix.to_string()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(prefix))
    }

    fn error(&mut self, variable: &str, message: impl Into<String>) {
        self.errors.push(EnvError {
            variable: variable.to_string(),
            message: message.into(),
        });
    }

    /// Parses `key` as a value of `kind`; `None` means the environment says nothing.
    pub fn parse(&mut self, kind: &Kind, key: &str) -> Option<Value> {
        match kind {
            Kind::Str => self.get(key).map(|v| Value::String(v.to_string())),
            Kind::Int => {
                let raw = self.get(key)?;
                match parse_python_int(raw) {
                    Some(n) => Some(Value::from(n)),
                    None => {
                        self.error(key, format!("'{raw}' is not an integer"));
                        None
                    }
                }
            }
            Kind::Float => {
                let raw = self.get(key)?;
                match raw.trim().replace('_', "").parse::<f64>() {
                    Ok(n) if n.is_finite() => serde_json::Number::from_f64(n).map(Value::Number),
                    _ => {
                        self.error(key, format!("'{raw}' is not a number"));
                        None
                    }
                }
            }
            Kind::Bool => {
                let raw = self.get(key)?;
                match parse_bool(raw) {
                    Some(b) => Some(Value::Bool(b)),
                    None => {
                        self.error(
                            key,
                            format!(
                                "'{raw}' is not a boolean (use 1/0, true/false, yes/no, on/off)"
                            ),
                        );
                        None
                    }
                }
            }
            Kind::Literal(values) => {
                let raw = self.get(key)?;
                if values.contains(&raw) {
                    Some(Value::String(raw.to_string()))
                } else {
                    self.error(key, format!("'{raw}' is not one of: {}", values.join(", ")));
                    None
                }
            }
            Kind::Json => {
                let raw = self.get(key)?;
                if raw.trim().is_empty() {
                    return None;
                }
                match serde_json::from_str::<Value>(raw) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        self.error(key, format!("not valid JSON ({e})"));
                        None
                    }
                }
            }
            Kind::Dict => {
                let raw = self.get(key)?;
                if raw.trim().is_empty() {
                    return None;
                }
                match serde_json::from_str::<Value>(raw) {
                    Ok(v @ Value::Object(_)) => Some(v),
                    Ok(_) => {
                        self.error(key, "must be a JSON object");
                        None
                    }
                    Err(e) => {
                        self.error(key, format!("not valid JSON ({e})"));
                        None
                    }
                }
            }
            Kind::Optional(inner) => {
                let value = self.parse(inner, key);
                let none_key = format!("{key}_IS_NONE");
                let is_none = match self.get(&none_key) {
                    Some(raw) => match parse_bool(raw) {
                        Some(b) => b,
                        None => {
                            self.error(&none_key, format!("'{raw}' is not a boolean"));
                            false
                        }
                    },
                    None => false,
                };
                let none = if is_none { Some(Value::Null) } else { None };
                merge(value, none, false)
            }
            Kind::List(item) => self.parse_list(item, key),
            Kind::Model(fields) => self.parse_model(fields, key),
        }
    }

    fn parse_list(&mut self, item: &Kind, key: &str) -> Option<Value> {
        let declared = self.get(key).filter(|raw| !raw.trim().is_empty());
        let Some(raw) = declared else {
            // Sequential items OH_X_0, OH_X_1, ... until the first gap.
            let mut items = Vec::new();
            loop {
                let sub = format!("{key}_{}", items.len());
                match self.parse(item, &sub) {
                    Some(v) => items.push(v),
                    None => break,
                }
            }
            return if items.is_empty() {
                None
            } else {
                Some(Value::Array(items))
            };
        };
        let mut items = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Number(n)) => match n.as_u64() {
                Some(count) if count <= 10_000 => vec![Value::String(HOLE.into()); count as usize],
                _ => {
                    self.error(key, "a list length must be a small non-negative integer");
                    return None;
                }
            },
            Ok(_) => {
                self.error(key, "must be a JSON list or a number of items");
                return None;
            }
            Err(e) => {
                self.error(key, format!("not valid JSON ({e})"));
                return None;
            }
        };
        for (index, slot) in items.iter_mut().enumerate() {
            let sub = format!("{key}_{index}");
            let value = self.parse(item, &sub);
            if let Some(merged) = merge(Some(slot.clone()), value, false) {
                *slot = merged;
            }
        }
        Some(Value::Array(items))
    }

    fn parse_model(&mut self, fields: &[Field], key: &str) -> Option<Value> {
        let mut result: Option<Value> = match self.get(key) {
            Some(raw) if !raw.trim().is_empty() => match serde_json::from_str::<Value>(raw) {
                Ok(v @ Value::Object(_)) => Some(v),
                Ok(_) => {
                    self.error(key, "must be a JSON object");
                    None
                }
                Err(e) => {
                    self.error(key, format!("not valid JSON ({e})"));
                    None
                }
            },
            _ => None,
        };
        for field in fields {
            let sub = env_key(key, field.name);
            if !self.has_prefix(&sub) {
                continue;
            }
            let Some(value) = self.parse(&field.kind, &sub) else {
                continue;
            };
            let mut object = match result.take() {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            };
            let existing = object.remove(field.name);
            if let Some(merged) = merge(existing, Some(value), false) {
                object.insert(field.name.to_string(), merged);
            }
            result = Some(Value::Object(object));
        }
        result
    }

    /// Variables the parse used.
    pub fn used(&self) -> &BTreeSet<String> {
        &self.used
    }

    /// Problems found so far.
    pub fn into_errors(self) -> Vec<EnvError> {
        self.errors
    }
}

/// `OH` + `field` → `OH_FIELD`.
pub fn env_key(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_ascii_uppercase()
    } else {
        format!("{prefix}_{}", field.to_ascii_uppercase())
    }
}

/// Merges `b` over `a` like the reference: objects key by key, lists slot by
/// slot, `null` in `b` keeps `a` unless `none_overrides`.
pub fn merge(a: Option<Value>, b: Option<Value>, none_overrides: bool) -> Option<Value> {
    let a = a.filter(|v| !is_hole(v));
    let Some(b) = b else { return a };
    if is_hole(&b) {
        return a.or(Some(b));
    }
    let Some(a) = a else { return Some(b) };
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, v) in b {
                let existing = a.remove(&k);
                if let Some(m) = merge(existing, Some(v), none_overrides) {
                    a.insert(k, m);
                }
            }
            Some(Value::Object(a))
        }
        (Value::Array(mut a), Value::Array(b)) => {
            for (i, v) in b.into_iter().enumerate() {
                if i < a.len() {
                    let existing = std::mem::take(&mut a[i]);
                    a[i] = merge(Some(existing), Some(v), none_overrides).unwrap_or(Value::Null);
                } else {
                    a.push(v);
                }
            }
            Some(Value::Array(a))
        }
        (a, Value::Null) if !none_overrides => Some(a),
        (_, b) => Some(b),
    }
}

fn is_hole(v: &Value) -> bool {
    matches!(v, Value::String(s) if s == HOLE)
}

/// Paths (as env variable names) of list slots that were declared but never filled.
pub fn unfilled_slots(value: &Value, key: &str, out: &mut Vec<String>) {
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let sub = format!("{key}_{i}");
                if is_hole(item) {
                    out.push(sub);
                } else {
                    unfilled_slots(item, &sub, out);
                }
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                unfilled_slots(v, &env_key(key, k), out);
            }
        }
        _ => {}
    }
}

/// Python's `int()` on a string: optional sign, underscores between digits.
fn parse_python_int(raw: &str) -> Option<i64> {
    let t = raw.trim();
    if t.is_empty() || t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    t.replace('_', "").parse::<i64>().ok()
}

/// `1/0`, `true/false`, `yes/no`, `on/off` (any case); empty is false.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "t" | "y" => Some(true),
        "0" | "false" | "no" | "off" | "f" | "n" | "" => Some(false),
        _ => None,
    }
}

/// Levenshtein distance (small strings only).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ITEM: &[Field] = &[
        Field::new("base_url", Kind::Str),
        Field::new("headers", Kind::Dict),
        Field::new("num_retries", Kind::Int),
    ];
    const MODEL: &[Field] = &[
        Field::new("keys", Kind::List(&Kind::Str)),
        Field::new("port", Kind::Int),
        Field::new("ratio", Kind::Float),
        Field::new("flag", Kind::Bool),
        Field::new("mode", Kind::Literal(&["a", "b"])),
        Field::new("maybe", Kind::Optional(&Kind::Str)),
        Field::new("hooks", Kind::List(&Kind::Model(ITEM))),
    ];

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> (Option<Value>, Vec<EnvError>) {
        let v = vars(pairs);
        let mut r = EnvReader::new(&v);
        let out = r.parse(&Kind::Model(MODEL), "OH");
        (out, r.into_errors())
    }

    #[test]
    fn scalars_lists_and_nulls() {
        let (v, e) = parse(&[
            ("OH_KEYS_0", "a"),
            ("OH_KEYS_1", "b"),
            ("OH_PORT", "8_000"),
            ("OH_RATIO", "0.5"),
            ("OH_FLAG", "TRUE"),
            ("OH_MODE", "b"),
            ("OH_MAYBE_IS_NONE", "1"),
        ]);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            v.unwrap(),
            json!({"keys":["a","b"],"port":8000,"ratio":0.5,"flag":true,"mode":"b","maybe":null})
        );
    }

    #[test]
    fn a_value_beats_is_none() {
        let (v, _) = parse(&[("OH_MAYBE", "x"), ("OH_MAYBE_IS_NONE", "1")]);
        assert_eq!(v.unwrap(), json!({"maybe":"x"}));
    }

    #[test]
    fn json_lists_and_counted_lists() {
        let (v, e) = parse(&[("OH_KEYS", "[\"x\",\"y\"]"), ("OH_KEYS_1", "z")]);
        assert!(e.is_empty());
        assert_eq!(v.unwrap(), json!({"keys":["x","z"]}));
        let (v, e) = parse(&[
            ("OH_HOOKS", "2"),
            ("OH_HOOKS_0_BASE_URL", "http://a"),
            ("OH_HOOKS_1", "{\"base_url\":\"http://b\"}"),
            ("OH_HOOKS_1_NUM_RETRIES", "7"),
            ("OH_HOOKS_0_HEADERS", "{\"X-K\":\"v\"}"),
        ]);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            v.unwrap(),
            json!({"hooks":[{"base_url":"http://a","headers":{"X-K":"v"}},{"base_url":"http://b","num_retries":7}]})
        );
    }

    #[test]
    fn unfilled_declared_slots_are_reported() {
        let (v, _) = parse(&[("OH_HOOKS", "2"), ("OH_HOOKS_0_BASE_URL", "http://a")]);
        let mut out = Vec::new();
        unfilled_slots(&v.unwrap(), "OH", &mut out);
        assert_eq!(out, vec!["OH_HOOKS_1".to_string()]);
    }

    #[test]
    fn malformed_values_name_the_variable() {
        let (_, e) = parse(&[("OH_PORT", "abc"), ("OH_FLAG", "maybe"), ("OH_MODE", "c")]);
        let names: Vec<&str> = e.iter().map(|e| e.variable.as_str()).collect();
        assert_eq!(names, vec!["OH_PORT", "OH_FLAG", "OH_MODE"]);
        let (_, e) = parse(&[("OH_HOOKS_0_HEADERS", "[1]"), ("OH_HOOKS_0_BASE_URL", "u")]);
        assert_eq!(e[0].variable, "OH_HOOKS_0_HEADERS");
        let (_, e) = parse(&[("OH_KEYS", "{")]);
        assert_eq!(e[0].variable, "OH_KEYS");
    }

    #[test]
    fn merge_follows_the_reference() {
        let file = json!({"keys":["f1","f2"],"port":1,"maybe":"m"});
        let env = json!({"keys":["e1"],"maybe":null});
        assert_eq!(
            merge(Some(file.clone()), Some(env.clone()), true).unwrap(),
            json!({"keys":["e1","f2"],"port":1,"maybe":null})
        );
        assert_eq!(
            merge(Some(file), Some(env), false).unwrap(),
            json!({"keys":["e1","f2"],"port":1,"maybe":"m"})
        );
        assert_eq!(merge(None, Some(json!(1)), true), Some(json!(1)));
        assert_eq!(
            merge(Some(json!([1])), Some(json!([2, 3])), true),
            Some(json!([2, 3]))
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(parse_bool("Yes"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("nah"), None);
        assert_eq!(parse_python_int(" -12 "), Some(-12));
        assert_eq!(parse_python_int("1__0"), None);
        assert_eq!(
            edit_distance("MAX_CONCURENT_RUNS", "MAX_CONCURRENT_RUNS"),
            1
        );
    }
}
