//! `inspect_image_with_vision`: when the agent's model cannot see images,
//! it asks a saved vision-capable profile about one image of the latest
//! user message and reads the answer as text. Added to an agent's default
//! tools automatically when its LLM has no vision and such a profile
//! exists (see `Agent::materialize_with`); the step then shows the model
//! text references to the images instead of the images themselves
//! ([`replace_latest_user_images`]).

use crate::profile_llm::{ProfileLlms, profile_has_vision};
use crate::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_llm::LlmRequest;
use openhands_wire::content::{Content, ImageContent};
use openhands_wire::message::{Message, Role};
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The tool's name.
pub const VISION_INSPECT_NAME: &str = "inspect_image_with_vision";
/// Its class name (in `include_default_tools`).
pub const VISION_INSPECT_CLASS: &str = "VisionInspectTool";
/// Usage ids of vision profiles start with this (`vision-profile:<name>`).
pub const VISION_USAGE_PREFIX: &str = "vision-profile";

/// `VisionInspectAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionInspectAction {
    /// Zero-based index of the image in the latest user message.
    pub image_index: u64,
    /// What to ask about it.
    pub question: String,
    /// The saved profile to ask; `None`: the first listed one.
    #[serde(default)]
    pub profile_name: Option<String>,
}

/// `VisionInspectObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionInspectObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the inspection failed.
    #[serde(default)]
    pub is_error: bool,
    /// The image inspected.
    pub image_index: u64,
    /// The question asked.
    pub question: String,
    /// The profile asked.
    #[serde(default)]
    pub profile_name: Option<String>,
    /// Its model.
    #[serde(default)]
    pub model: Option<String>,
    /// Its endpoint.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Its answer.
    #[serde(default)]
    pub answer: Option<String>,
}

impl VisionInspectObservation {
    fn failure(action: &VisionInspectAction, text: String, profile: Option<&str>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            image_index: action.image_index,
            question: action.question.clone(),
            profile_name: profile.map(str::to_string),
            model: None,
            base_url: None,
            answer: None,
        }
    }
}

/// The tool: the vision profiles found when it was created and the
/// conversation's profile access.
pub struct VisionInspectTool {
    profiles: Vec<String>,
    llms: Arc<dyn ProfileLlms>,
}

impl std::fmt::Debug for VisionInspectTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VisionInspectTool")
            .field("profiles", &self.profiles)
            .finish_non_exhaustive()
    }
}

impl VisionInspectTool {
    /// The tool for a conversation, `None` when it has no profile access
    /// or no saved profile takes images (as the reference, which offers
    /// nothing then).
    pub fn create(env: &ToolEnv) -> Option<Self> {
        let llms = env.profile_llms.clone()?;
        let profiles = llms.vision_profiles();
        (!profiles.is_empty()).then_some(Self { profiles, llms })
    }

    /// The profiles it offers.
    pub fn profiles(&self) -> &[String] {
        &self.profiles
    }
}

const SYSTEM_PROMPT: &str =
    "You are shown one image and a question about it. Reply with a short plain-text answer.";

impl TypedTool for VisionInspectTool {
    type Action = VisionInspectAction;
    type Observation = VisionInspectObservation;
    const NAME: &'static str = VISION_INSPECT_NAME;
    const KIND: &'static str = VISION_INSPECT_CLASS;
    const ACTION_KIND: &'static str = "VisionInspectAction";
    const OBSERVATION_KIND: &'static str = "VisionInspectObservation";

    fn description(&self) -> String {
        let list: Vec<String> = self.profiles.iter().map(|p| format!("- {p}")).collect();
        format!(
            "Have a model that can see images look at one image the user attached to their \
             latest message, and get its answer as text.\n\nYour own model cannot read images: \
             the user's images appear to you as numbered references. When a detail of such an \
             image matters, call this tool with the image's number (image_index) and a precise \
             question; ask again with another question if the first answer is not enough. Each \
             call is billed to this conversation.\n\nSaved profiles that can see images (the \
             first is used when profile_name is omitted):\n{}",
            list.join("\n")
        )
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "image_index": {"type": "integer", "description": "Number of the image in the latest user message, counting from 0."},
                "question": {"type": "string", "description": "What the vision model should find out about the image."},
                "profile_name": {"type": "string", "description": "Saved profile to ask instead of the first one listed."}
            },
            "required": ["image_index", "question"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: true,
        }
    }

    fn validate(&self, action: &VisionInspectAction) -> Result<(), ToolError> {
        if action.question.is_empty() {
            return Err(ToolError::InvalidArguments(
                "question must not be empty".into(),
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        action: VisionInspectAction,
        ctx: &ToolCallContext,
    ) -> Result<VisionInspectObservation, ToolError> {
        let fail = |text: String, profile: Option<&str>| {
            Ok(VisionInspectObservation::failure(&action, text, profile))
        };
        let Some(profile) = action
            .profile_name
            .clone()
            .or_else(|| self.profiles.first().cloned())
        else {
            return fail(
                "No saved profile that can see images is available.".into(),
                None,
            );
        };
        if !self.profiles.contains(&profile) {
            return fail(
                format!("Profile '{profile}' is not one of the vision profiles offered here."),
                Some(&profile),
            );
        }
        let urls = self.llms.latest_user_image_urls();
        let Some(url) = usize::try_from(action.image_index)
            .ok()
            .and_then(|i| urls.get(i))
        else {
            return fail(
                format!(
                    "There is no image {} in the latest user message; it has {} image(s).",
                    action.image_index,
                    urls.len()
                ),
                Some(&profile),
            );
        };
        let usage_id = format!("{VISION_USAGE_PREFIX}:{profile}");
        let llm = match crate::profile_llm::load_profile_llm(self.llms.clone(), &profile, &usage_id)
            .await
        {
            Ok(llm) => llm,
            Err(e) => {
                return fail(
                    format!("The vision profile '{profile}' could not be loaded: {e}"),
                    Some(&profile),
                );
            }
        };
        let model = Some(llm.model().to_string());
        let base_url = llm.config().base_url.clone();
        if !profile_has_vision(llm.config()) {
            let mut obs = VisionInspectObservation::failure(
                &action,
                format!(
                    "Profile '{profile}' uses the model '{}', which cannot see images.",
                    llm.model()
                ),
                Some(&profile),
            );
            obs.model = model;
            return Ok(obs);
        }
        let request = LlmRequest {
            messages: vec![
                Message::system(SYSTEM_PROMPT),
                Message::new(
                    Role::User,
                    vec![
                        Content::text(action.question.clone()),
                        Content::Image(ImageContent::new(vec![url.clone()])),
                    ],
                ),
            ],
            tools: Vec::new(),
            conversation_id: None,
        };
        let result = tokio::select! {
            r = llm.completion(&request, None) => r,
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Execution("the vision inspection was interrupted".into()));
            }
        };
        self.llms.record_usage(&llm);
        let answer = match result {
            Ok(resp) => resp
                .message
                .content
                .iter()
                .find_map(|c| c.as_text().map(str::to_string))
                .unwrap_or_default(),
            Err(e) => {
                let mut obs = VisionInspectObservation::failure(
                    &action,
                    format!("The vision model failed: {e}"),
                    Some(&profile),
                );
                obs.model = model;
                obs.base_url = base_url;
                return Ok(obs);
            }
        };
        let mut obs = VisionInspectObservation::failure(
            &action,
            "The vision model answered without any text.".into(),
            Some(&profile),
        );
        obs.model = model;
        obs.base_url = base_url;
        if !answer.is_empty() {
            obs.content = vec![Content::text(answer.clone())];
            obs.is_error = false;
            obs.answer = Some(answer);
        }
        Ok(obs)
    }
}

/// Whether the latest user message among `messages` has an image.
pub fn latest_user_message_has_image(messages: &[Message]) -> bool {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .is_some_and(has_image)
}

fn has_image(m: &Message) -> bool {
    m.content.iter().any(|c| matches!(c, Content::Image(_)))
}

/// `messages` with the images of the latest user message that has any
/// replaced by numbered text references to [`VISION_INSPECT_NAME`].
pub fn replace_latest_user_images(mut messages: Vec<Message>) -> Vec<Message> {
    let Some(message) = messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::User && has_image(m))
    else {
        return messages;
    };
    let mut index = 0usize;
    let mut content = Vec::with_capacity(message.content.len());
    for part in std::mem::take(&mut message.content) {
        match part {
            Content::Image(image) => {
                for _ in &image.image_urls {
                    content.push(Content::text(format!(
                        "[The user attached image {index} here; you cannot see it. Call \
                         {VISION_INSPECT_NAME} with image_index={index} to learn what it shows.]"
                    )));
                    index += 1;
                }
            }
            text => content.push(text),
        }
    }
    message.content = content;
    messages
}

/// The agent's reply when images reach a model that cannot see them and no
/// vision profile can help.
pub fn no_vision_reply(model: &str) -> Message {
    Message::assistant(format!(
        "Your message has an image, but the model in use ({model}) cannot read images and no \
         saved profile with vision is available to look at it for me. Switch to a model that \
         accepts images, or save such a profile, and send the image again."
    ))
}
