//! Which actions of an event log still wait for their result.

use openhands_wire::event::{ActionEvent, Event, EventBody};
use std::collections::HashSet;

/// Actions that still wait for a result: `(action event id, action)`.
pub(crate) fn unmatched_actions(events: &[Event]) -> Vec<(String, ActionEvent)> {
    let mut answered: HashSet<&str> = HashSet::new();
    for e in events {
        match &e.body {
            EventBody::Observation(o) => {
                answered.insert(o.tool_call_id.as_str());
            }
            EventBody::UserReject(r) => {
                answered.insert(r.tool_call_id.as_str());
            }
            EventBody::AgentError(a) => {
                answered.insert(a.tool_call_id.as_str());
            }
            _ => {}
        }
    }
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a)
                if a.action.is_some() && !answered.contains(a.tool_call_id.as_str()) =>
            {
                Some((e.id.clone(), a.clone()))
            }
            _ => None,
        })
        .collect()
}
