//! Where agent settings keep secrets, and one walk over them: the secret
//! fields of the table (`llm.api_key`, the AWS keys, the critic key), every
//! MCP server's `env` and `headers` values, and `agent_context.secrets`
//! given as plain strings. The walk encrypts them for the disk, redacts or
//! encrypts them for answers, and opens what clients post back.

use super::fields;
use crate::secrets::{Cipher, looks_encrypted};
use openhands_wire::secret::REDACTED;
use serde_json::{Map, Value};

/// Applies `f` to every secret string of agent settings (`null` stays).
pub fn walk(agent: &mut Map<String, Value>, f: &mut dyn FnMut(&str) -> Value) {
    let table = match agent.get("agent_kind").and_then(Value::as_str) {
        Some("acp") => fields::ACP_AGENT,
        _ => fields::OPENHANDS_AGENT,
    };
    for field in table.iter().filter(|f| f.secret) {
        let mut parts = field.key.split('.').peekable();
        let mut cur = &mut *agent;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                if let Some(v) = cur.get_mut(part)
                    && let Some(s) = v.as_str()
                {
                    *v = f(s);
                }
                break;
            }
            match cur.get_mut(part) {
                Some(Value::Object(m)) => cur = m,
                _ => break,
            }
        }
    }
    if let Some(Value::Object(servers)) = agent.get_mut("mcp_config") {
        for server in servers.values_mut() {
            for map in ["env", "headers"] {
                if let Some(Value::Object(values)) = server.get_mut(map) {
                    for v in values.values_mut() {
                        if let Some(s) = v.as_str() {
                            *v = f(s);
                        }
                    }
                }
            }
        }
    }
    if let Some(Value::Object(ctx)) = agent.get_mut("agent_context")
        && let Some(Value::Object(secrets)) = ctx.get_mut("secrets")
    {
        for v in secrets.values_mut() {
            if let Some(s) = v.as_str() {
                *v = f(s);
            }
        }
    }
}

/// The clear value of a secret read from disk or posted by a client:
/// tokens of our key decrypted (others dropped), empty and redacted values
/// dropped, anything else kept.
pub fn open(value: &str, cipher: Option<&Cipher>) -> Value {
    if value.trim().is_empty() || value == REDACTED {
        return Value::Null;
    }
    if looks_encrypted(value)
        && let Some(cipher) = cipher
    {
        return match cipher.decrypt(value) {
            Some(clear) => Value::String(clear),
            None => {
                tracing::warn!("a settings secret cannot be decrypted with the configured keys");
                Value::Null
            }
        };
    }
    Value::String(value.to_string())
}

/// Every secret opened (see [`open`]).
pub fn open_all(agent: &mut Map<String, Value>, cipher: Option<&Cipher>) {
    walk(agent, &mut |s| open(s, cipher));
}

/// Every secret encrypted (with a key) or left in clear (without one, as
/// the reference stores them).
pub fn seal_all(agent: &mut Map<String, Value>, cipher: Option<&Cipher>) {
    if let Some(cipher) = cipher {
        walk(agent, &mut |s| Value::String(cipher.encrypt(s)));
    }
}

/// Every secret that `cipher` (or one of its previous keys) opens
/// re-encrypted with its current key; clear values, and tokens no key
/// opens, are left as they are (nothing is lost to a missing key).
pub fn reseal_all(agent: &mut Map<String, Value>, cipher: &Cipher) {
    walk(agent, &mut |s| {
        if !looks_encrypted(s) {
            return Value::String(s.to_string());
        }
        match cipher.decrypt(s) {
            Some(clear) => Value::String(cipher.encrypt(&clear)),
            None => Value::String(s.to_string()),
        }
    });
}

/// Every secret replaced by the redaction placeholder.
pub fn redact_all(agent: &mut Map<String, Value>) {
    walk(agent, &mut |_| Value::String(REDACTED.into()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent() -> Map<String, Value> {
        match json!({
            "agent_kind": "openhands",
            "llm": {"api_key": "sk-1", "aws_secret_access_key": null, "model": "m"},
            "verification": {"critic_api_key": "ck"},
            "mcp_config": {"s": {"env": {"TOKEN": "t"}, "headers": {"X": "h"}, "command": "c"}},
            "agent_context": {"secrets": {"A": "a", "B": {"kind": "LookupSecret"}}}
        }) {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn seal_then_open_round_trips_and_leaves_other_values() {
        let cipher = Cipher::new("k", &[]).unwrap();
        let mut a = agent();
        seal_all(&mut a, Some(&cipher));
        let text = Value::Object(a.clone()).to_string();
        for clear in ["sk-1", "\"ck\"", "\"t\"", "\"h\"", "\"a\""] {
            assert!(!text.contains(clear), "{clear} left in {text}");
        }
        assert_eq!(a["llm"]["model"], "m");
        assert_eq!(a["mcp_config"]["s"]["command"], "c");
        open_all(&mut a, Some(&cipher));
        assert_eq!(a, agent());
    }

    #[test]
    fn redacted_and_foreign_tokens_open_to_null() {
        let cipher = Cipher::new("k", &[]).unwrap();
        let other = Cipher::new("other", &[]).unwrap();
        assert_eq!(open(REDACTED, Some(&cipher)), Value::Null);
        assert_eq!(open("  ", Some(&cipher)), Value::Null);
        assert_eq!(open(&other.encrypt("x"), Some(&cipher)), Value::Null);
        assert_eq!(open("plain", Some(&cipher)), json!("plain"));
    }

    #[test]
    fn reseal_moves_tokens_of_a_previous_key_to_the_current_one() {
        let old = Cipher::new("old", &[]).unwrap();
        let foreign = Cipher::new("foreign", &[]).unwrap();
        let rotated = Cipher::new("new", &["old".to_string()]).unwrap();
        let only_new = Cipher::new("new", &[]).unwrap();
        let mut a = agent();
        seal_all(&mut a, Some(&old));
        let unknown = foreign.encrypt("x");
        a["agent_context"]["secrets"]
            .as_object_mut()
            .unwrap()
            .insert("C".into(), Value::String(unknown.clone()));
        reseal_all(&mut a, &rotated);
        assert_eq!(
            only_new
                .decrypt(a["llm"]["api_key"].as_str().unwrap())
                .as_deref(),
            Some("sk-1")
        );
        assert!(old.decrypt(a["llm"]["api_key"].as_str().unwrap()).is_none());
        assert_eq!(a["agent_context"]["secrets"]["C"], unknown.as_str());
    }

    #[test]
    fn redact_hides_every_secret() {
        let mut a = agent();
        redact_all(&mut a);
        assert_eq!(a["llm"]["api_key"], REDACTED);
        assert_eq!(a["llm"]["aws_secret_access_key"], Value::Null);
        assert_eq!(a["mcp_config"]["s"]["env"]["TOKEN"], REDACTED);
        assert_eq!(a["agent_context"]["secrets"]["B"]["kind"], "LookupSecret");
    }
}
