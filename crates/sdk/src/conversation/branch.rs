//! The event tree and its active branch.
//!
//! Every event names its parent (`parent_id`); the conversation's HEAD
//! (`leaf_event_id`) picks the branch the agent works on: the path from
//! the HEAD back to the root. State updates hang off the HEAD without
//! becoming it, so they are never on a branch. `navigate_to` moves the
//! HEAD to any earlier event (or to the empty tree), and what is appended
//! next starts a sibling branch; nothing is ever removed from the log.
//!
//! Events written before the tree existed have no parent: each one's
//! parent is the event before it in the log, so old logs read as one line.
//! As long as the log *is* one line ending at the HEAD — every
//! conversation that never navigated — the branch is the whole log (state
//! updates aside), and readers use the log itself without copying.

use openhands_wire::event::{Event, kinds};
use openhands_wire::state::ConversationState;
use std::borrow::Cow;
use std::collections::HashSet;

/// The `parent_id` of a root created after other events exist (the first
/// event appended after navigating to the empty tree), which must not be
/// read as a legacy event chained to its predecessor.
pub const ROOT_PARENT_ID: &str = "__root__";

/// What the tree needs of an event: its id, its parent and its kind. Held
/// by the events themselves and by the log's heads (see
/// [`super::journal`]), so that the tree is walked without loading events.
pub trait Node {
    /// The event's id.
    fn node_id(&self) -> &str;
    /// The id of the event it hangs from, if set; `log` is the log the
    /// node is in (a head may keep its parent as a position there).
    fn node_parent<'a>(&'a self, log: &'a [Self]) -> Option<&'a str>
    where
        Self: Sized;
    /// The `kind` discriminator.
    fn node_kind(&self) -> &str;
}

impl Node for Event {
    fn node_id(&self) -> &str {
        &self.id
    }
    fn node_parent<'a>(&'a self, _log: &'a [Self]) -> Option<&'a str> {
        self.parent_id.as_deref()
    }
    fn node_kind(&self) -> &str {
        self.kind()
    }
}

/// Whether `event` can be a node of the tree (state updates cannot).
pub(crate) fn is_node(event: &impl Node) -> bool {
    event.node_kind() != kinds::STATE_UPDATE
}

/// The effective HEAD: the set leaf; none for a deliberately empty HEAD;
/// otherwise (a log from before the tree) the last event that is not a
/// state update or a conversation error.
pub(crate) fn resolve_leaf(events: &[impl Node], state: &ConversationState) -> Option<String> {
    if let Some(leaf) = &state.leaf_event_id {
        return Some(leaf.clone());
    }
    if state.head_is_empty {
        return None;
    }
    events
        .iter()
        .rev()
        .find(|e| is_node(*e) && e.node_kind() != kinds::CONVERSATION_ERROR)
        .map(|e| e.node_id().to_string())
}

/// The HEAD as it really is after a load. `base_state.json` is not
/// rewritten for every event (events are committed in batches), so its
/// `leaf_event_id` can lag behind the log; the HEAD is then the newest
/// event that descends from the stored one. (Moving the HEAD always writes
/// the state at once, so the stored HEAD is on the active branch.)
pub(crate) fn catch_up_leaf(events: &[impl Node], state: &ConversationState) -> Option<String> {
    let start = match &state.leaf_event_id {
        Some(leaf) => events.iter().position(|e| e.node_id() == leaf)? + 1,
        None if state.head_is_empty => 0,
        None => return None,
    };
    let mut subtree: HashSet<&str> = HashSet::new();
    if let Some(leaf) = &state.leaf_event_id {
        subtree.insert(leaf);
    }
    let mut head = state.leaf_event_id.clone();
    for (index, event) in events.iter().enumerate().skip(start) {
        if !is_node(event) {
            continue;
        }
        let descends = match event.node_parent(events) {
            Some(ROOT_PARENT_ID) => state.leaf_event_id.is_none(),
            Some(parent) => subtree.contains(parent),
            None => index
                .checked_sub(1)
                .is_some_and(|p| subtree.contains(events[p].node_id())),
        };
        if descends {
            subtree.insert(event.node_id());
            head = Some(event.node_id().to_string());
        }
    }
    head
}

/// The parent `events[index]` hangs from, by log index.
fn parent_index(
    events: &[Event],
    index_of: &dyn Fn(&str) -> Option<usize>,
    index: usize,
) -> Option<usize> {
    match events[index].parent_id.as_deref() {
        Some(ROOT_PARENT_ID) => None,
        Some(parent) => index_of(parent),
        None => index.checked_sub(1),
    }
}

/// True when the log is one line ending at `leaf`: every node's parent is
/// the node before it (or, for legacy events, unset), and `leaf` is the
/// last node. The branch is then the whole log.
pub(crate) fn is_linear(events: &[impl Node], leaf: Option<&str>) -> bool {
    let mut previous: Option<&str> = None;
    for event in events.iter().filter(|e| is_node(*e)) {
        match event.node_parent(events) {
            None => {}
            Some(ROOT_PARENT_ID) if previous.is_none() => {}
            Some(parent) if Some(parent) == previous => {}
            Some(_) => return false,
        }
        previous = Some(event.node_id());
    }
    previous == leaf
}

/// The events from the root to `leaf`, root first. A parent that cannot be
/// found or a cycle ends the walk there (the part found is kept).
pub(crate) fn path_to_root(
    events: &[Event],
    index_of: &dyn Fn(&str) -> Option<usize>,
    leaf: Option<&str>,
) -> Vec<Event> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut current = leaf.and_then(index_of);
    while let Some(index) = current {
        if !seen.insert(index) {
            tracing::warn!(event = %events[index].id, "cycle in the event tree");
            break;
        }
        chain.push(events[index].clone());
        current = parent_index(events, index_of, index);
    }
    chain.reverse();
    chain
}

/// The active branch: the log itself when it is linear, else the path to
/// the HEAD.
pub(crate) fn active_branch<'a>(
    events: &'a [Event],
    index_of: &dyn Fn(&str) -> Option<usize>,
    state: &ConversationState,
    linear: bool,
) -> Cow<'a, [Event]> {
    if linear {
        return Cow::Borrowed(events);
    }
    let leaf = resolve_leaf(events, state);
    Cow::Owned(path_to_root(events, index_of, leaf.as_deref()))
}

#[cfg(test)]
#[path = "branch_tests.rs"]
mod tests;
