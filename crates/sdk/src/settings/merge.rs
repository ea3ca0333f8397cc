//! The two merges of `PATCH /api/settings`: RFC 7386 merge patch for
//! `agent_settings_diff` (a `null` anywhere removes the key, so the field
//! falls back to its default) and the reference's deep merge for the
//! conversation and misc diffs (a `null` inside a nested map removes that
//! entry; a top-level `null` is kept and left to validation).

use serde_json::{Map, Value};

/// RFC 7386: `patch` applied to `base`.
pub fn merge_patch(base: &Map<String, Value>, patch: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in patch {
        match value {
            Value::Null => {
                out.remove(key);
            }
            Value::Object(p) => {
                let merged = match out.get(key) {
                    Some(Value::Object(b)) => merge_patch(b, p),
                    _ => merge_patch(&Map::new(), p),
                };
                out.insert(key.clone(), Value::Object(merged));
            }
            other => {
                out.insert(key.clone(), other.clone());
            }
        }
    }
    out
}

/// The reference's deep merge: nested objects merge recursively, a `null`
/// inside a nested object removes that key, a top-level `null` is set as
/// is, a new key gets the overlay's value unchanged.
pub fn deep_merge(base: &Map<String, Value>, overlay: &Map<String, Value>) -> Map<String, Value> {
    merge_level(base, overlay, false)
}

fn merge_level(
    base: &Map<String, Value>,
    overlay: &Map<String, Value>,
    unset_nulls: bool,
) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in overlay {
        match (value, out.get(key)) {
            (Value::Null, _) if unset_nulls => {
                out.remove(key);
            }
            (Value::Object(o), Some(Value::Object(b))) => {
                let merged = merge_level(b, o, true);
                out.insert(key.clone(), Value::Object(merged));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn merge_patch_removes_nulls_at_every_level() {
        let base = obj(json!({"a": 1, "b": {"c": 2, "d": 3}}));
        let out = merge_patch(&base, &obj(json!({"a": null, "b": {"c": null, "e": 4}})));
        assert_eq!(Value::Object(out), json!({"b": {"d": 3, "e": 4}}));
    }

    #[test]
    fn deep_merge_keeps_top_level_nulls_and_unsets_nested_ones() {
        let base = obj(json!({"x": 1, "m": {"k": 1, "j": 2}}));
        let out = deep_merge(&base, &obj(json!({"x": null, "m": {"k": null}, "l": [1]})));
        assert_eq!(
            Value::Object(out),
            json!({"x": null, "m": {"j": 2}, "l": [1]})
        );
    }

    #[test]
    fn deep_merge_assigns_new_maps_wholesale() {
        let out = deep_merge(&Map::new(), &obj(json!({"m": {"k": null}})));
        assert_eq!(Value::Object(out), json!({"m": {"k": null}}));
    }
}
