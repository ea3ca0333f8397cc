//! Meta-profiles: model-routing configurations (the reference's
//! `MetaProfile`). A classifier profile reads the recent conversation and
//! either picks one of the ordered `classes` (each naming the saved LLM
//! profile for that kind of task) or, with a `prompt_template`, names a
//! saved profile directly. Every model reference is a saved LLM profile's
//! name. Stored as `<dir>/<name>.json`; the `route_task_to_model` tool reads
//! them through a [`MetaProfileSource`] (the agent server installs its own).

use serde::{Deserialize, Serialize};

/// One task class and the LLM profile that handles it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaProfileClass {
    /// What tasks of this class look like.
    pub description: String,
    /// The LLM profile to switch to.
    pub model: String,
}

/// A model-routing configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaProfile {
    /// The LLM profile that classifies the task.
    pub classifier_model: String,
    /// Ordered task classes.
    #[serde(default)]
    pub classes: Vec<MetaProfileClass>,
    /// Direct-routing prompt (needs `{{ instance_text }}`, excludes classes).
    #[serde(default)]
    pub prompt_template: Option<String>,
    /// Text for `{{ model_table }}` in direct-routing prompts.
    #[serde(default)]
    pub model_table: Option<String>,
}

impl MetaProfile {
    /// The reference's checks: a template names `{{ instance_text }}` and
    /// has no classes; with `require_route`, classes or a template exist.
    pub fn check(&self, require_route: bool) -> Result<(), MetaProfileError> {
        if let Some(t) = &self.prompt_template {
            if !has_placeholder(t, "instance_text") {
                return Err(MetaProfileError::NoInstanceText);
            }
            if !self.classes.is_empty() {
                return Err(MetaProfileError::TemplateWithClasses);
            }
        }
        if require_route && self.classes.is_empty() && self.prompt_template.is_none() {
            return Err(MetaProfileError::NoRoute);
        }
        Ok(())
    }

    /// Parses and checks (as a stored one loads) a meta-profile.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, MetaProfileError> {
        let profile: MetaProfile = serde_json::from_value(value.clone())
            .map_err(|e| MetaProfileError::Shape(std::sync::Arc::new(e)))?;
        profile.check(false)?;
        Ok(profile)
    }
}

/// Why a meta-profile is refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetaProfileError {
    /// The JSON is not a meta-profile (shared, so load errors stay `Clone`).
    #[error("{0}")]
    Shape(#[source] std::sync::Arc<serde_json::Error>),
    /// A direct-routing template without its `{{ instance_text }}`.
    #[error(
        "Direct-routing meta-profiles must include {{{{ instance_text }}}} in prompt_template."
    )]
    NoInstanceText,
    /// A direct-routing template beside task classes.
    #[error("Direct-routing meta-profiles cannot also define classes.")]
    TemplateWithClasses,
    /// Neither classes nor a template (when a route is required).
    #[error("A meta-profile needs either classes or a prompt_template to route.")]
    NoRoute,
}

/// Whether `template` has `{{ name }}` (spaces inside the braces allowed).
pub(crate) fn has_placeholder(template: &str, name: &str) -> bool {
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return false;
        };
        if after[..end].trim() == name {
            return true;
        }
        rest = &after[end..];
    }
    false
}

/// Why a meta-profile could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetaProfileLoadError {
    /// No meta-profile of that name.
    #[error("Meta-profile `{name}` not found. Available meta-profiles: {}", list_or_none(.available))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names stored.
        available: Vec<String>,
    },
    /// The file is unreadable or does not validate (the name, and why).
    #[error("Failed to load meta-profile `{0}`: {1}")]
    Invalid(
        String,
        #[source] std::sync::Arc<dyn std::error::Error + Send + Sync>,
    ),
}

impl MetaProfileLoadError {
    /// The meta-profile `name` does not load because of `cause`.
    pub fn invalid(name: &str, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Invalid(name.to_string(), std::sync::Arc::new(cause))
    }
}

/// `a, b` or `none`.
pub(crate) fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Stored meta-profiles by name. Methods do blocking I/O.
pub trait MetaProfileSource: Send + Sync {
    /// The stored names, sorted.
    fn names(&self) -> Vec<String>;
    /// The meta-profile `name`.
    fn load(&self, name: &str) -> Result<MetaProfile, MetaProfileLoadError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mp(classes: usize, template: Option<&str>) -> MetaProfile {
        MetaProfile {
            classifier_model: "c".into(),
            classes: (0..classes)
                .map(|i| MetaProfileClass {
                    description: format!("d{i}"),
                    model: "m".into(),
                })
                .collect(),
            prompt_template: template.map(str::to_string),
            model_table: None,
        }
    }

    #[test]
    fn routing_rules_match_the_reference() {
        assert!(mp(1, None).check(true).is_ok());
        assert!(mp(0, None).check(false).is_ok());
        assert!(
            mp(0, None)
                .check(true)
                .unwrap_err()
                .to_string()
                .contains("needs either classes")
        );
        assert!(mp(0, Some("route {{ instance_text }}")).check(true).is_ok());
        assert!(mp(0, Some("route {{instance_text}}")).check(true).is_ok());
        assert!(
            mp(0, Some("no slot"))
                .check(true)
                .unwrap_err()
                .to_string()
                .contains("instance_text")
        );
        assert!(
            mp(1, Some("{{ instance_text }}"))
                .check(true)
                .unwrap_err()
                .to_string()
                .contains("cannot also")
        );
    }
}
