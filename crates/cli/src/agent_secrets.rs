//! `agent_settings.agent_context.secrets`: named secrets of the settings
//! (a value, possibly Fernet-encrypted with `OH_SECRET_KEY`, or a
//! `StaticSecret`/`LookupSecret` object), taken out of the agent context
//! and given to each conversation's secret registry, as the reference's
//! conversation seeds them: commands that name them get them as
//! environment variables, outputs are masked, and they are stored
//! encrypted (or redacted), never in the agent's JSON.

use crate::error::usage;
use openhands_sdk::secrets::{Cipher, SecretSource};
use serde_json::Value;

/// Removes `secrets` from the agent context `ctx` and returns them; a
/// value that cannot be read (malformed, or encrypted with another key)
/// is a usage error naming it.
pub fn take(
    ctx: &mut Value,
    cipher: Option<&Cipher>,
    settings_name: &str,
) -> anyhow::Result<Vec<(String, SecretSource)>> {
    let Some(obj) = ctx.as_object_mut() else {
        return Ok(Vec::new());
    };
    let map = match obj.remove("secrets") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(usage(format!(
                "{settings_name}: agent_settings.agent_context.secrets must be an object of \
                 NAME: value"
            )));
        }
    };
    let mut out = Vec::new();
    for (name, value) in map {
        let Some(source) = SecretSource::from_json(&value, cipher) else {
            return Err(usage(format!(
                "{settings_name}: agent_settings.agent_context.secrets.{name} cannot be read: \
                 it must be a value or {{\"value\": ...}} / {{\"kind\": \"LookupSecret\", \"url\": \
                 ...}}, and an encrypted value needs the OH_SECRET_KEY that encrypted it"
            )));
        };
        out.push((name, source));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;
    use serde_json::json;

    #[test]
    fn secrets_leave_the_context_for_the_registry() {
        let cipher = Cipher::new("k", &[]).unwrap();
        let mut ctx = json!({"skills": [], "secrets": {
            "PLAIN": "p1",
            "ENC": cipher.encrypt("e1"),
            "OBJ": {"value": "o1", "description": "d"},
            "LOOK": {"kind": "LookupSecret", "url": "http://h/s"}
        }});
        let got = take(&mut ctx, Some(&cipher), "s.json").unwrap();
        assert!(ctx.get("secrets").is_none());
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.len(), 4);
        let value = |n: &str| match &got.iter().find(|(k, _)| k == n).unwrap().1 {
            SecretSource::Static { value, .. } => value.clone(),
            other => format!("{other:?}"),
        };
        assert_eq!(value("PLAIN"), "p1");
        assert_eq!(value("ENC"), "e1");
        assert_eq!(value("OBJ"), "o1");
        assert!(value("LOOK").contains("Lookup"));

        let mut ctx = json!({"secrets": {"ENC": cipher.encrypt("e1")}});
        let e = take(&mut ctx, None, "s.json").unwrap_err();
        assert!(
            as_usage(&e)
                .unwrap()
                .0
                .contains("agent_context.secrets.ENC"),
            "{e}"
        );
        let mut ctx = json!({"secrets": ["x"]});
        assert!(take(&mut ctx, None, "s.json").is_err());
        let mut ctx = json!({"secrets": null});
        assert!(take(&mut ctx, None, "s.json").unwrap().is_empty());
    }
}
