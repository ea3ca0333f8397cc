use super::*;
use crate::fsutil::Durability;
use openhands_wire::event::{EventBody, MessageEvent, SourceType};
use openhands_wire::message::Message;
use std::fs;

/// A log of `n` chained user messages written to a store in a temp dir.
fn written(n: usize) -> (tempfile::TempDir, EventStore, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let store = EventStore::open(dir.path(), Durability::Batched).unwrap();
    let mut events: Vec<Event> = Vec::with_capacity(n);
    for index in 0..n {
        let mut event = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: Message::user(format!("message {index}")),
                llm_response_id: None,
                activated_skills: Vec::new(),
                extended_content: Vec::new(),
                sender: None,
                critic_result: None,
            }),
        );
        event.parent_id = events.last().map(|e| e.id.clone());
        store.append(index, &event).unwrap();
        events.push(event);
    }
    (dir, store, events)
}

#[test]
fn a_resumed_log_keeps_heads_and_reads_a_page_from_the_files() {
    let (_dir, store, events) = written(12);
    let (journal, problems) = Journal::resumed(&store).unwrap();
    assert!(problems.is_empty());
    assert!(!journal.is_loaded());
    assert_eq!(journal.len(), 12);
    assert!(journal.events.is_empty(), "no event is held in full");
    let head = &journal.heads()[5];
    assert_eq!(head.id(), events[5].id);
    assert_eq!(head.parent_id(journal.heads()), Some(events[4].id.as_str()));
    assert_eq!(head.kind(), "MessageEvent");
    assert_eq!(head.source(), SourceType::User);
    assert_eq!(head.timestamp(), events[5].timestamp);
    assert_eq!(journal.index_of(&events[7].id), Some(7));

    let page = journal.read(Some(&store), &[3, 4, 5, 99]).run().unwrap();
    assert_eq!(
        page,
        events[3..6].to_vec(),
        "in order, past the end left out"
    );
    let backwards = journal.read(Some(&store), &[2, 1]).run().unwrap();
    assert_eq!(backwards, vec![events[2].clone(), events[1].clone()]);
}

#[test]
fn loading_a_resumed_log_gives_every_event_and_later_reads_come_from_memory() {
    let (_dir, store, events) = written(6);
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    assert!(journal.load(&store).is_empty());
    assert!(journal.is_loaded());
    assert_eq!(journal.events(), events.as_slice());
    // The files are gone: reads are answered from the loaded events.
    fs::remove_dir_all(store.dir()).unwrap();
    assert_eq!(
        journal.read(Some(&store), &[0, 5]).run().unwrap(),
        vec![events[0].clone(), events[5].clone()]
    );
}

#[test]
fn an_event_file_lost_after_resume_fails_its_read_and_leaves_the_log_on_load() {
    let (_dir, store, events) = written(5);
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    fs::remove_file(store.path_of(2, &events[2].id)).unwrap();
    assert!(journal.read(Some(&store), &[1, 2]).run().is_err());
    assert_eq!(
        journal.read(Some(&store), &[3]).run().unwrap(),
        vec![events[3].clone()],
        "the other files still read"
    );

    let problems = journal.load(&store);
    assert_eq!(problems.len(), 1);
    let mut kept = events.clone();
    kept.remove(2);
    assert_eq!(journal.events(), kept.as_slice());
    assert_eq!(journal.len(), 4, "heads rebuilt from what was read");
    assert_eq!(
        journal.index_of(&events[3].id),
        Some(2),
        "positions move up"
    );
    assert_eq!(journal.index_of(&events[2].id), None);
    // Appending after the rebuild keeps the file numbering of the log.
    let next = Event::new(EventBody::Pause);
    journal.push(next.clone(), 5);
    assert_eq!(journal.index_of(&next.id), Some(4));
}

#[test]
fn a_resumed_head_finds_its_parent_by_position_in_the_log() {
    let (_dir, store, _) = written(3);
    let (journal, _) = Journal::resumed(&store).unwrap();
    let [a, b, _] = journal.heads() else {
        panic!("three heads")
    };
    assert_eq!(b.parent_id(journal.heads()), Some(a.id()));
    assert!(
        !b.spills(),
        "the parent is not named again: the head keeps its position"
    );
}

#[test]
fn an_id_seen_twice_finds_the_newer_event() {
    let mut journal = Journal::loaded(Vec::new());
    let first = Event::new(EventBody::Pause);
    let mut again = Event::new(EventBody::Interrupt);
    again.id = first.id.clone();
    journal.push(first.clone(), 0);
    journal.push(Event::new(EventBody::Pause), 1);
    assert_eq!(journal.index_of(&first.id), Some(0));
    journal.push(again, 2);
    assert_eq!(journal.index_of(&first.id), Some(2));
    assert_eq!(journal.index_of("nowhere"), None);
}

#[test]
fn a_loaded_log_holds_what_is_pushed_and_an_unknown_kind_keeps_its_name() {
    let mut journal = Journal::loaded(Vec::new());
    let unknown: Event = serde_json::from_value(serde_json::json!({
        "kind": "SomeFutureEvent", "id": "u1", "timestamp": "2026-01-01T00:00:00",
        "source": "environment", "extra": 1
    }))
    .unwrap();
    journal.push(unknown.clone(), 0);
    let update = crate::conversation::core::state_update("goal", serde_json::json!({"a": 1}));
    journal.push(update.clone(), 1);
    assert_eq!(journal.heads()[0].kind(), "SomeFutureEvent");
    assert_eq!(journal.heads()[0].state_key(), None);
    assert_eq!(
        journal.heads()[1].state_key(),
        Some("goal"),
        "a state update keeps its key"
    );
    assert_eq!(journal.events(), [unknown, update].as_slice());
    assert_eq!(journal.index_of("u1"), Some(0));
}
