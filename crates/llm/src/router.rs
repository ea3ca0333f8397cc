//! Router LLMs (the reference's `RouterLLM`): one LLM configuration that
//! holds several named LLMs (`llms_for_routing`) and lets a strategy
//! (`router_name`) pick one of them for every request.
//!
//! The reference has no `kind` for routers: a router is an `LLM` object with
//! three more fields, `router_name`, `llms_for_routing` (name → LLM JSON)
//! and `active_llm`. [`LlmConfig`] keeps them in `extra`, so they
//! round-trip verbatim; [`spec_of`] reads them. Strategies:
//!
//! * `multimodal_router` — members `primary` and `secondary`: a request with
//!   an image in any message goes to `primary` (the vision model), as does a
//!   request larger than `secondary`'s `max_input_tokens`; everything else
//!   goes to `secondary`;
//! * `random_router` — any member, chosen at random.
//!
//! The chosen member answers with its own retries, fallbacks and metrics;
//! the router records nothing itself.

use crate::error::LlmError;
use crate::model_info;
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::Message;
use parking_lot::Mutex;
use serde_json::Value;
use std::hash::{BuildHasher, Hasher};

/// The field holding the member LLMs (name → LLM JSON).
pub const MEMBERS_FIELD: &str = "llms_for_routing";
/// The field naming the strategy.
pub const NAME_FIELD: &str = "router_name";
/// `router_name` of the multimodal router.
pub const MULTIMODAL: &str = "multimodal_router";
/// `router_name` of the random router.
pub const RANDOM: &str = "random_router";
/// The multimodal router's vision (and long-context) member.
pub const PRIMARY: &str = "primary";
/// The multimodal router's text-only member.
pub const SECONDARY: &str = "secondary";

/// Characters per token in the size estimate the multimodal router
/// compares with `secondary`'s input limit.
const CHARS_PER_TOKEN: usize = 4;
/// Tokens an image is counted as in that estimate.
const IMAGE_TOKENS: usize = 1_000;

/// How a router chooses a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `multimodal_router`.
    Multimodal,
    /// `random_router`.
    Random,
}

impl Strategy {
    /// The strategy of a `router_name`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            MULTIMODAL => Some(Self::Multimodal),
            RANDOM => Some(Self::Random),
            _ => None,
        }
    }
}

/// A router configuration read from an LLM configuration: the strategy and
/// the members' configurations in their JSON order.
pub type RouterSpec = (Strategy, Vec<(String, LlmConfig)>);

/// The router described by `config`, `None` for a plain LLM (no
/// `llms_for_routing`, or `null`). Errors name the field at fault: an
/// empty member map, a member that is not an LLM configuration, an unknown
/// `router_name`, missing `primary`/`secondary` of the multimodal router.
pub fn spec_of(config: &LlmConfig) -> Result<Option<RouterSpec>, LlmError> {
    let members = match config.extra.get(MEMBERS_FIELD) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(LlmError::Config(format!(
                "{MEMBERS_FIELD} must be an object of LLM configurations"
            )));
        }
    };
    if members.is_empty() {
        return Err(LlmError::Config(format!(
            "{MEMBERS_FIELD} cannot be empty - at least one LLM must be provided"
        )));
    }
    let name = config
        .extra
        .get(NAME_FIELD)
        .and_then(Value::as_str)
        .unwrap_or_default();
    let strategy = Strategy::from_name(name).ok_or_else(|| {
        LlmError::Config(format!(
            "{NAME_FIELD} '{name}' is not a known router (expected '{MULTIMODAL}' or '{RANDOM}')"
        ))
    })?;
    let mut out = Vec::with_capacity(members.len());
    for (key, value) in members {
        let member: LlmConfig = serde_json::from_value(value.clone())
            .map_err(|e| LlmError::Config(format!("{MEMBERS_FIELD}.{key} is not an LLM: {e}")))?;
        out.push((key.clone(), member));
    }
    check_members(strategy, out.iter().map(|(k, _)| k.as_str()))?;
    Ok(Some((strategy, out)))
}

/// The members a strategy needs are present.
fn check_members<'a>(
    strategy: Strategy,
    mut names: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), LlmError> {
    if strategy == Strategy::Multimodal {
        for (key, label) in [(PRIMARY, "Primary"), (SECONDARY, "Secondary")] {
            if !names.clone().any(|n| n == key) {
                return Err(LlmError::Config(format!(
                    "{label} LLM key '{key}' not found in {MEMBERS_FIELD}."
                )));
            }
        }
    }
    if names.next().is_none() {
        return Err(LlmError::Config(format!(
            "{MEMBERS_FIELD} cannot be empty - at least one LLM must be provided"
        )));
    }
    Ok(())
}

/// What a router needs of a member (an [`crate::Llm`]).
pub trait RouteMember: Clone {
    /// The member's configuration (its model's limits decide routes).
    fn config(&self) -> &LlmConfig;
    /// The member's model name.
    fn model(&self) -> &str;
}

/// The members of a router LLM and its strategy.
pub struct Router<M> {
    strategy: Strategy,
    members: Vec<(String, M)>,
    active: Mutex<Option<String>>,
}

impl<M> std::fmt::Debug for Router<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("strategy", &self.strategy)
            .field(
                "members",
                &self.members.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<M: RouteMember> Router<M> {
    /// A router over `members` (checked as [`spec_of`] checks them).
    pub fn new(strategy: Strategy, members: Vec<(String, M)>) -> Result<Self, LlmError> {
        check_members(strategy, members.iter().map(|(k, _)| k.as_str()))?;
        Ok(Self {
            strategy,
            members,
            active: Mutex::new(None),
        })
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The members, by name, in order.
    pub fn members(&self) -> &[(String, M)] {
        &self.members
    }

    /// The member chosen for the last request, if any.
    pub fn active(&self) -> Option<String> {
        self.active.lock().clone()
    }

    /// The member that answers `messages`; remembered as the active one.
    pub fn select(&self, messages: &[Message]) -> (String, M) {
        let index = match self.strategy {
            Strategy::Multimodal => self.multimodal(messages),
            Strategy::Random => random_below(self.members.len()),
        };
        let (name, llm) = self.members[index.min(self.members.len() - 1)].clone();
        tracing::info!(member = %name, model = %llm.model(), "router LLM chose a member");
        *self.active.lock() = Some(name.clone());
        (name, llm)
    }

    fn index_of(&self, name: &str) -> usize {
        self.members
            .iter()
            .position(|(k, _)| k == name)
            .unwrap_or(0)
    }

    fn multimodal(&self, messages: &[Message]) -> usize {
        if messages.iter().any(contains_image) {
            return self.index_of(PRIMARY);
        }
        let secondary = self.index_of(SECONDARY);
        let limit = model_info::context_window(self.members[secondary].1.config()) as usize;
        if limit > 0 && estimate_tokens(messages) > limit {
            tracing::warn!(
                limit,
                "the request exceeds the secondary model's input limit; routing to primary"
            );
            return self.index_of(PRIMARY);
        }
        secondary
    }
}

/// Whether a message has an image part.
pub fn contains_image(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|c| matches!(c, Content::Image(_)))
}

/// A size estimate of `messages` in tokens: text and tool-call arguments
/// at four characters per token, a fixed count per image.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| {
            let text: usize = m
                .content
                .iter()
                .map(|c| match c {
                    Content::Text(t) => t.text.len() / CHARS_PER_TOKEN,
                    Content::Image(_) => IMAGE_TOKENS,
                })
                .sum();
            let calls: usize = m
                .tool_calls
                .iter()
                .flatten()
                .map(|c| (c.name.len() + c.arguments.len()) / CHARS_PER_TOKEN)
                .sum();
            text + calls
        })
        .sum()
}

/// A random index below `n` (`n > 0`), from the standard library's
/// randomly keyed hasher.
fn random_below(n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() % n as u64) as usize
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
