//! The position of every event id in a log of [`EventHead`]s, and the
//! placing of each head's parent by position (see [`EventHead::parent_id`]).

use super::event_head::EventHead;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use std::hash::{BuildHasher, RandomState};

/// The position of every id in the log. The table holds positions only
/// (4 bytes each): the ids are read from the heads, held or paged, not
/// kept twice.
#[derive(Debug, Default)]
pub(super) struct IdIndex {
    table: HashTable<u32>,
    hasher: RandomState,
}

impl IdIndex {
    /// An empty index with room for `capacity` ids.
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            table: HashTable::with_capacity(capacity),
            hasher: RandomState::new(),
        }
    }

    /// The position of `id` among `heads`, the heads this index records.
    pub(super) fn find(&self, heads: &[EventHead], id: &str) -> Option<usize> {
        self.find_with(id, |p| heads.get(p).is_some_and(|h| h.id() == id))
    }

    /// The position of `id`, where `is_id(position)` tells whether the
    /// event at a candidate position has that id (the heads are read only
    /// for the candidates whose hash matches).
    pub(super) fn find_with(
        &self,
        id: &str,
        mut is_id: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        self.table
            .find(self.hasher.hash_one(id), |p| is_id(*p as usize))
            .map(|p| *p as usize)
    }

    /// Records `heads[position]`; an id seen before now finds the newer
    /// event.
    pub(super) fn record(&mut self, heads: &[EventHead], position: usize) {
        let (Some(head), Ok(place)) = (heads.get(position), u32::try_from(position)) else {
            return;
        };
        let id_at = |p: &u32| heads.get(*p as usize).map_or("", EventHead::id);
        let hasher = &self.hasher;
        match self.table.entry(
            hasher.hash_one(head.id()),
            |p| id_at(p) == head.id(),
            |p| hasher.hash_one(id_at(p)),
        ) {
            Entry::Occupied(mut seen) => *seen.get_mut() = place,
            Entry::Vacant(slot) => {
                slot.insert(place);
            }
        }
    }
}

/// Places the parent of every head of `heads` (a log) by position, and
/// indexes their ids. Each head finds its parent among those before it.
pub(super) fn place_parents(heads: &mut [EventHead]) -> IdIndex {
    let mut ids = IdIndex::with_capacity(heads.len());
    for position in 0..heads.len() {
        let (before, rest) = heads.split_at_mut(position);
        if let Some(head) = rest.first_mut() {
            head.place_parent(|id| ids.find(before, id));
        }
        ids.record(heads, position);
    }
    ids
}

/// Makes every head of `heads` (a log) name its parent again instead of
/// placing it, before the log's positions change.
pub(super) fn name_parents(heads: &mut [EventHead]) {
    for position in (0..heads.len()).rev() {
        let (before, rest) = heads.split_at_mut(position);
        if let Some(head) = rest.first_mut() {
            head.name_parent(before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::{Event, EventBody};

    /// Heads of events chained each to the one before, except the first
    /// (its parent is outside the log) and the last (it hangs from the
    /// first).
    fn chain(n: usize) -> Vec<EventHead> {
        let events: Vec<Event> = (0..n).map(|_| Event::new(EventBody::Pause)).collect();
        let mut heads: Vec<EventHead> = Vec::new();
        for (index, event) in events.iter().enumerate() {
            let mut event = event.clone();
            event.parent_id = Some(match index {
                0 => "outside".to_string(),
                i if i == n - 1 => events[0].id.clone(),
                i => events[i - 1].id.clone(),
            });
            heads.push(EventHead::of(&event, index));
        }
        heads
    }

    #[test]
    fn parents_placed_and_named_again_give_back_the_heads() {
        let named = chain(5);
        let mut heads = named.clone();
        let ids = place_parents(&mut heads);
        for (position, head) in heads.iter().enumerate() {
            assert_eq!(ids.find(&heads, head.id()), Some(position));
            assert_eq!(head.parent_id(&heads), named[position].parent_id(&[]));
        }
        assert!(heads[0].spills(), "a parent outside the log stays named");
        assert!(!heads[2].spills(), "a parent before the head is placed");
        name_parents(&mut heads);
        assert_eq!(heads, named);
        assert_eq!(ids.find(&heads, "nowhere"), None);
    }
}
