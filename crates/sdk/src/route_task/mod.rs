//! The `route_task_to_model` tool (the reference's
//! `ClassifyAndSwitchLLMTool`): the meta-profile's classifier LLM reads the
//! recent conversation and picks the saved LLM profile for the task, and
//! the conversation switches to it through the same path `switch_llm`
//! takes ([`LlmSwitch`]). A classifier answer that names nothing usable is
//! an error observation, never a silent default.
//!
//! The meta-profile is resolved on each call, as the reference does: a
//! configured name is looked up in the store first, the inline
//! `meta_profile` is used when the store cannot resolve it (or no name is
//! configured), and without either the alphabetically first stored one.

pub mod prompt;

use crate::llm_switch::{LlmSwitch, ProfileSwitchError};
use crate::meta_profile::{MetaProfile, MetaProfileLoadError, MetaProfileSource, list_or_none};
use crate::profile_llm::{ProfileLlmError, ProfileLlms, load_profile_llm};
use crate::tool::{Tool, ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_llm::{Llm, LlmRequest};
use openhands_protocol::py_repr::py_repr;
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The tool's name, as the model calls it.
pub const NAME: &str = "route_task_to_model";
/// The tool's class name (tool specs, `include_default_tools`).
pub const CLASS: &str = "ClassifyAndSwitchLLMTool";
/// How many of the latest messages the classifier reads.
pub const RECENT_MESSAGES: usize = 6;
/// The tool-spec parameters it takes.
pub const PARAMS: [&str; 3] = ["active_meta_profile", "meta_profile", "meta_profile_llms"];

/// `ClassifyAndSwitchLLMAction` (no fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifyAndSwitchLlmAction {}

/// `ClassifyAndSwitchLLMObservation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassifyAndSwitchLlmObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether classifying or switching failed.
    #[serde(default)]
    pub is_error: bool,
    /// The matched class's description (`model: <name>` in direct mode).
    #[serde(default)]
    pub chosen_class: Option<String>,
    /// The LLM profile activated (or that failed to activate).
    #[serde(default)]
    pub model: Option<String>,
    /// The model of the activated profile.
    #[serde(default)]
    pub active_model: Option<String>,
}

impl ClassifyAndSwitchLlmObservation {
    fn failed(text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            ..Self::default()
        }
    }
}

/// The tool's configuration (its tool-spec parameters).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteParams {
    /// The meta-profile's name in the store.
    pub active_meta_profile: Option<String>,
    /// The meta-profile given inline.
    pub meta_profile: Option<MetaProfile>,
    /// LLMs given inline by profile name (classifier and targets).
    pub meta_profile_llms: BTreeMap<String, LlmConfig>,
}

impl RouteParams {
    /// Reads and checks tool-spec parameters; an error names the parameter.
    pub fn from_params(params: &Map<String, Value>) -> Result<Self, RouteParamsError> {
        if let Some(other) = params.keys().find(|k| !PARAMS.contains(&k.as_str())) {
            return Err(RouteParamsError::Unknown(other.clone()));
        }
        let present = |k: &str| params.get(k).filter(|v| !v.is_null());
        let active_meta_profile = match present("active_meta_profile") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.is_empty()),
            Some(_) => return Err(RouteParamsError::ActiveNotString),
        };
        let meta_profile = present("meta_profile")
            .map(|v| MetaProfile::from_json(v).map_err(RouteParamsError::MetaProfile))
            .transpose()?;
        let meta_profile_llms = match present("meta_profile_llms") {
            None => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(name, v)| {
                    serde_json::from_value::<LlmConfig>(v.clone())
                        .map(|c| (name.clone(), c))
                        .map_err(|e| RouteParamsError::Llm(name.clone(), e))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(RouteParamsError::LlmsNotObject),
        };
        Ok(Self {
            active_meta_profile,
            meta_profile,
            meta_profile_llms,
        })
    }
}

/// Why the tool's spec parameters are refused (the text names the parameter).
#[derive(Debug, thiserror::Error)]
pub enum RouteParamsError {
    /// A parameter the tool does not take.
    #[error(
        "{CLASS} only accepts 'active_meta_profile', 'meta_profile' and 'meta_profile_llms' (got '{0}')"
    )]
    Unknown(String),
    /// `active_meta_profile` is not a string.
    #[error("active_meta_profile: Input should be a valid string")]
    ActiveNotString,
    /// The inline meta-profile is refused.
    #[error("meta_profile: {0}")]
    MetaProfile(#[source] crate::meta_profile::MetaProfileError),
    /// An inline LLM (by its profile name) is not an LLM configuration.
    #[error("meta_profile_llms.{0}: {1}")]
    Llm(String, #[source] serde_json::Error),
    /// `meta_profile_llms` is not an object.
    #[error("meta_profile_llms: Input should be a valid dictionary")]
    LlmsNotObject,
}

/// Why no meta-profile could be chosen to route with.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The store has it but it does not load.
    #[error(transparent)]
    Load(#[from] MetaProfileLoadError),
    /// The active name is neither stored nor given inline.
    #[error(
        "Active meta-profile '{name}' could not be resolved from the store or inline configuration. Available meta-profiles: {}",
        list_or_none(.available)
    )]
    Unresolved {
        /// The active name.
        name: String,
        /// The stored names.
        available: Vec<String>,
    },
    /// Nothing active, nothing inline, nothing stored.
    #[error("No meta-profile is active and none are available in the meta-profile store.")]
    NoneAvailable,
    /// The blocking store read did not finish.
    #[error("{0}")]
    Interrupted(#[source] tokio::task::JoinError),
}

/// The `route_task_to_model` tool of one conversation.
pub struct ClassifyAndSwitchLlmTool {
    params: RouteParams,
    switch: Option<Arc<dyn LlmSwitch>>,
    llms: Option<Arc<dyn ProfileLlms>>,
    store: Option<Arc<dyn MetaProfileSource>>,
}

impl std::fmt::Debug for ClassifyAndSwitchLlmTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassifyAndSwitchLlmTool")
            .field("active_meta_profile", &self.params.active_meta_profile)
            .finish_non_exhaustive()
    }
}

impl ClassifyAndSwitchLlmTool {
    /// The tool for the conversation of `env`, configured by `params`.
    pub fn new(params: RouteParams, env: &ToolEnv) -> Self {
        Self {
            params,
            switch: env.llm_switch.clone(),
            llms: env.profile_llms.clone(),
            store: env.meta_profiles.clone(),
        }
    }

    /// The meta-profile to route with (blocking: reads the store).
    fn resolve(
        params: &RouteParams,
        store: Option<&dyn MetaProfileSource>,
    ) -> Result<MetaProfile, ResolveError> {
        let names = || store.map(|s| s.names()).unwrap_or_default();
        let name = params.active_meta_profile.as_deref();
        if let (Some(name), Some(store)) = (name, store) {
            match store.load(name) {
                Ok(m) => return Ok(m),
                Err(MetaProfileLoadError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(inline) = &params.meta_profile {
            return Ok(inline.clone());
        }
        if let Some(name) = name {
            return Err(ResolveError::Unresolved {
                name: name.to_string(),
                available: names(),
            });
        }
        let first = names().into_iter().next();
        match (first, store) {
            (Some(first), Some(store)) => {
                tracing::info!(meta_profile = %first, "no active meta-profile; using the first stored");
                Ok(store.load(&first)?)
            }
            _ => Err(ResolveError::NoneAvailable),
        }
    }

    /// The classifier's LLM: an inline one by that name, else the saved
    /// profile, registered under `classifier:<name>`.
    async fn classifier(
        &self,
        llms: &Arc<dyn ProfileLlms>,
        name: &str,
    ) -> Result<Llm, ProfileLlmError> {
        let usage_id = format!("classifier:{name}");
        match self.params.meta_profile_llms.get(name) {
            Some(config) => llms.config_llm(config.clone(), &usage_id),
            None => load_profile_llm(llms.clone(), name, &usage_id).await,
        }
    }
}

/// The tool for a tool spec named `name` with `params`: `None` for other
/// names, an error for parameters it does not take.
pub fn by_spec(
    name: &str,
    params: &Map<String, Value>,
    env: &ToolEnv,
) -> Option<Result<Arc<dyn Tool>, ToolError>> {
    (name == NAME || name == CLASS).then(|| {
        RouteParams::from_params(params)
            .map(|p| Arc::new(ClassifyAndSwitchLlmTool::new(p, env)) as Arc<dyn Tool>)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))
    })
}

impl TypedTool for ClassifyAndSwitchLlmTool {
    type Action = ClassifyAndSwitchLlmAction;
    type Observation = ClassifyAndSwitchLlmObservation;
    const NAME: &'static str = NAME;
    const KIND: &'static str = CLASS;
    const ACTION_KIND: &'static str = "ClassifyAndSwitchLLMAction";
    const OBSERVATION_KIND: &'static str = "ClassifyAndSwitchLLMObservation";

    fn description(&self) -> String {
        "Pick the best-suited saved LLM profile for the task at hand and move this conversation \
         to it.\n\n\
         Call it once the task is clear (at the start, or when the user changes what they want). \
         A classifier model reads the latest messages and matches them against the routing \
         rules of the active meta-profile; the conversation then continues on the profile those \
         rules assign. This call is still answered by the current model; the chosen model takes \
         over from the next step. It takes no arguments. When the classifier cannot decide, you \
         get an error and the current model stays."
            .to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    async fn run(
        &self,
        _action: ClassifyAndSwitchLlmAction,
        ctx: &ToolCallContext,
    ) -> Result<ClassifyAndSwitchLlmObservation, ToolError> {
        let (Some(switch), Some(llms)) = (self.switch.clone(), self.llms.clone()) else {
            return Ok(ClassifyAndSwitchLlmObservation::failed(
                "There is no conversation whose LLM could be routed.".into(),
            ));
        };
        let (params, store) = (self.params.clone(), self.store.clone());
        let meta = tokio::task::spawn_blocking(move || Self::resolve(&params, store.as_deref()))
            .await
            .unwrap_or_else(|e| Err(ResolveError::Interrupted(e)));
        let meta = match meta {
            Ok(m) => m,
            Err(e) => {
                return Ok(ClassifyAndSwitchLlmObservation::failed(format!(
                    "Failed to resolve the active meta-profile: {e}"
                )));
            }
        };
        let classifier = match self.classifier(&llms, &meta.classifier_model).await {
            Ok(llm) => llm,
            Err(e) => {
                return Ok(ClassifyAndSwitchLlmObservation::failed(format!(
                    "Failed to load classifier profile '{}': {e}",
                    meta.classifier_model
                )));
            }
        };

        let transcript = switch.recent_messages(RECENT_MESSAGES).join("\n");
        let transcript = if transcript.is_empty() {
            "(no messages yet)".to_string()
        } else {
            transcript
        };
        let request = LlmRequest {
            messages: prompt::classifier_messages(&meta, &transcript),
            tools: Vec::new(),
            conversation_id: None,
        };
        let result = tokio::select! {
            r = classifier.completion(&request, None) => r,
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Execution("routing the task was interrupted".into()));
            }
        };
        llms.record_usage(&classifier);
        let reply = match result {
            Ok(r) => r
                .message
                .content
                .iter()
                .map(|c| match c {
                    Content::Text(t) => t.text.clone(),
                    Content::Image(i) => format!("[Image: {} URLs]", i.image_urls.len()),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => {
                return Ok(ClassifyAndSwitchLlmObservation::failed(format!(
                    "Classifier call failed: {e}"
                )));
            }
        };

        let (target, chosen_class) = if meta.prompt_template.is_none() {
            let index = prompt::parse_class_index(&reply, meta.classes.len());
            let Some(class) = index.checked_sub(1).and_then(|i| meta.classes.get(i)) else {
                return Ok(ClassifyAndSwitchLlmObservation::failed(format!(
                    "Classifier did not pick a valid category (reply: {}); refusing to silently \
                     route to a default. Retry the tool or fix the meta-profile classes.",
                    py_repr(&reply)
                )));
            };
            (class.model.clone(), class.description.clone())
        } else {
            let mut available = switch.profile_names();
            available.extend(self.params.meta_profile_llms.keys().cloned());
            available.sort();
            available.dedup();
            let Some(target) = prompt::parse_direct_model(&reply, &available) else {
                return Ok(ClassifyAndSwitchLlmObservation::failed(format!(
                    "Classifier reply did not resolve to a saved LLM profile (reply: {}); \
                     refusing to silently route to a default. Retry the tool or extend the \
                     model table.",
                    py_repr(&reply)
                )));
            };
            let chosen = format!("model: {target}");
            (target, chosen)
        };

        let inline = self.params.meta_profile_llms.get(&target).cloned();
        let name = target.clone();
        let switched = tokio::task::spawn_blocking(move || match inline {
            Some(config) => switch.switch_profile_config(&name, config),
            None => switch.switch_profile(&name),
        })
        .await
        .unwrap_or_else(|e| Err(ProfileSwitchError::Conversation(e.to_string())));
        let failed = |text: String| ClassifyAndSwitchLlmObservation {
            content: vec![Content::text(text)],
            is_error: true,
            chosen_class: Some(chosen_class.clone()),
            model: Some(target.clone()),
            active_model: None,
        };
        Ok(match switched {
            Ok(active_model) => ClassifyAndSwitchLlmObservation {
                content: vec![Content::text(format!(
                    "The task was classified as '{chosen_class}'; the conversation now uses LLM \
                     profile '{target}' (model '{active_model}') from the next step on."
                ))],
                is_error: false,
                chosen_class: Some(chosen_class.clone()),
                model: Some(target.clone()),
                active_model: Some(active_model),
            },
            Err(ProfileSwitchError::NotFound(_)) => {
                failed(format!("Target LLM profile '{target}' was not found."))
            }
            Err(e) => failed(format!("Failed to switch to LLM profile '{target}': {e}")),
        })
    }
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
