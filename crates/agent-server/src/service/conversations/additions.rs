//! `agent_launch_additions` of a start request (the reference's
//! `AgentLaunchAdditions`): deployment text appended to the agent's
//! system-message suffix and deployment skills merged into its context by
//! name. `llm_profile_ref` only applies to `agent_profile_id` launches,
//! which this server does not offer, so it is refused like the reference
//! refuses it without a profile.

use openhands_protocol::conversations::too_long;
use openhands_protocol::validation::{LocPart, ValidationIssue, from_body};
use openhands_wire::agent::AgentSpec;
use serde_json::{Map, Value, json};

/// Longest `system_message_suffix_append`, in characters.
const MAX_SUFFIX: usize = 32768;
const FIELD: &str = "agent_launch_additions";

/// Validated launch additions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchAdditions {
    /// Appended to `agent_context.system_message_suffix`.
    pub suffix: Option<String>,
    /// Skills (JSON as given) added when their names are new.
    pub skills: Vec<Value>,
}

fn at(parts: &[LocPart]) -> Vec<LocPart> {
    let mut loc: Vec<LocPart> = vec!["body".into(), FIELD.into()];
    loc.extend(parts.iter().cloned());
    loc
}

/// Parses `value` (absent or `null`: nothing to add); problems are issues
/// naming the field, in pydantic's shape.
pub fn parse(value: Option<&Value>) -> Result<LaunchAdditions, Vec<ValidationIssue>> {
    let obj = match value {
        None | Some(Value::Null) => return Ok(LaunchAdditions::default()),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(vec![
                ValidationIssue::new(
                    "model_type",
                    at(&[]),
                    "Input should be a valid dictionary or instance of AgentLaunchAdditions",
                    other.clone(),
                )
                .with_ctx(json!({"class_name": "AgentLaunchAdditions"})),
            ]);
        }
    };
    let mut issues = Vec::new();
    let mut out = LaunchAdditions::default();
    for (key, v) in obj {
        match key.as_str() {
            "system_message_suffix_append" => match v {
                Value::Null => {}
                Value::String(s) if s.chars().count() > MAX_SUFFIX => {
                    issues.push(too_long(&["body", FIELD, key], s, MAX_SUFFIX));
                }
                Value::String(s) => out.suffix = Some(s.clone()),
                other => issues.push(ValidationIssue::new(
                    "string_type",
                    at(&[key.as_str().into()]),
                    "Input should be a valid string",
                    other.clone(),
                )),
            },
            "skills" => match v {
                Value::Null => {}
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        match from_body::<openhands_sdk::skills::Skill>(item.clone()) {
                            Ok(_) => out.skills.push(item.clone()),
                            Err(e) => issues.extend(e.issues.into_iter().map(|mut issue| {
                                let rest = issue.loc.split_off(usize::from(!issue.loc.is_empty()));
                                issue.loc = at(&["skills".into(), LocPart::Index(i)]);
                                issue.loc.extend(rest);
                                issue
                            })),
                        }
                    }
                }
                other => issues.push(ValidationIssue::new(
                    "list_type",
                    at(&["skills".into()]),
                    "Input should be a valid list",
                    other.clone(),
                )),
            },
            "llm_profile_ref" => {
                if !v.is_null() {
                    let message =
                        "`agent_launch_additions.llm_profile_ref` requires `agent_profile_id`";
                    issues.push(
                        ValidationIssue::new(
                            "value_error",
                            vec!["body".into()],
                            format!("Value error, {message}"),
                            Value::Object(obj.clone()),
                        )
                        .with_ctx(json!({ "error": message })),
                    );
                }
            }
            _ => issues.push(ValidationIssue::new(
                "extra_forbidden",
                at(&[key.as_str().into()]),
                "Extra inputs are not permitted",
                v.clone(),
            )),
        }
    }
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(issues)
    }
}

impl LaunchAdditions {
    /// Adds these to `agent`'s context as the reference's launch does: the
    /// suffix after the existing one (blank line between), skills whose
    /// names are neither present nor in `disabled_skills`.
    pub fn apply(&self, agent: &mut AgentSpec) {
        let suffix = self
            .suffix
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        if suffix.is_none() && self.skills.is_empty() {
            return;
        }
        let mut ctx = match agent.agent_context.take() {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Some(addition) = suffix {
            let existing = ctx
                .get("system_message_suffix")
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
                .to_string();
            let joined = if existing.is_empty() {
                addition.to_string()
            } else {
                format!("{existing}\n\n{addition}")
            };
            ctx.insert("system_message_suffix".into(), Value::String(joined));
        }
        if !self.skills.is_empty() {
            let names = |key: &str, field: Option<&str>| -> Vec<String> {
                ctx.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| match field {
                        Some(f) => v.get(f).and_then(Value::as_str),
                        None => v.as_str(),
                    })
                    .map(str::to_string)
                    .collect()
            };
            let mut taken = names("skills", Some("name"));
            taken.extend(names("disabled_skills", None));
            let mut list = match ctx.remove("skills") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            for skill in &self.skills {
                let Some(name) = skill.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if !taken.iter().any(|t| t == name) {
                    taken.push(name.to_string());
                    list.push(skill.clone());
                }
            }
            ctx.insert("skills".into(), Value::Array(list));
        }
        agent.agent_context = Some(Value::Object(ctx));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::LlmConfig;

    fn locs(e: Vec<ValidationIssue>) -> Vec<Value> {
        e.into_iter()
            .map(|i| serde_json::to_value(i).unwrap()["loc"].clone())
            .collect()
    }

    #[test]
    fn bad_additions_are_refused_naming_the_field() {
        let e = parse(Some(
            &json!({"system_message_suffix_append": 3, "colour": "red"}),
        ))
        .unwrap_err();
        assert_eq!(
            locs(e),
            vec![
                json!(["body", FIELD, "system_message_suffix_append"]),
                json!(["body", FIELD, "colour"])
            ]
        );
        let e = parse(Some(&json!({"skills": [{"content": "no name"}]}))).unwrap_err();
        assert_eq!(locs(e), vec![json!(["body", FIELD, "skills", 0, "name"])]);
        let e = parse(Some(&json!({"llm_profile_ref": "fast"}))).unwrap_err();
        let v = serde_json::to_value(&e[0]).unwrap();
        assert_eq!(v["loc"], json!(["body"]));
        assert!(
            v["msg"]
                .as_str()
                .unwrap()
                .contains("requires `agent_profile_id`")
        );
        let long = "x".repeat(MAX_SUFFIX + 1);
        let e = parse(Some(&json!({"system_message_suffix_append": long}))).unwrap_err();
        assert_eq!(
            serde_json::to_value(&e[0]).unwrap()["type"],
            "string_too_long"
        );
        assert_eq!(
            parse(Some(&json!(null))).unwrap(),
            LaunchAdditions::default()
        );
    }

    #[test]
    fn additions_extend_the_suffix_and_add_only_new_skills() {
        let mut agent = AgentSpec::new(LlmConfig::new("m"), vec![]);
        agent.agent_context = Some(json!({
            "system_message_suffix": "Own text.  ",
            "skills": [{"name": "mine", "content": "kept"}],
            "disabled_skills": ["off"]
        }));
        let additions = parse(Some(&json!({
            "system_message_suffix_append": "  Deployment text.",
            "skills": [
                {"name": "mine", "content": "replaced?"},
                {"name": "off", "content": "denied"},
                {"name": "new", "content": "added"}
            ]
        })))
        .unwrap();
        additions.apply(&mut agent);
        let ctx = agent.agent_context.unwrap();
        assert_eq!(
            ctx["system_message_suffix"],
            "Own text.\n\nDeployment text."
        );
        let skills: Vec<(&str, &str)> = ctx["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["name"].as_str().unwrap(), s["content"].as_str().unwrap()))
            .collect();
        assert_eq!(skills, [("mine", "kept"), ("new", "added")]);
        let mut bare = AgentSpec::new(LlmConfig::new("m"), vec![]);
        parse(Some(&json!({"system_message_suffix_append": "Only this."})))
            .unwrap()
            .apply(&mut bare);
        assert_eq!(
            bare.agent_context.unwrap(),
            json!({"system_message_suffix": "Only this."})
        );
    }
}
