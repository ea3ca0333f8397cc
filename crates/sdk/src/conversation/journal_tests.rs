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
    let head = &journal.held()[5];
    assert_eq!(head.id(), events[5].id);
    assert_eq!(head.parent_id(journal.held()), Some(events[4].id.as_str()));
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
    let [a, b, _] = journal.held() else {
        panic!("three heads")
    };
    assert_eq!(b.parent_id(journal.held()), Some(a.id()));
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
    assert_eq!(journal.held()[0].kind(), "SomeFutureEvent");
    assert_eq!(journal.held()[0].state_key(), None);
    assert_eq!(
        journal.held()[1].state_key(),
        Some("goal"),
        "a state update keeps its key"
    );
    assert_eq!(journal.events(), [unknown, update].as_slice());
    assert_eq!(journal.index_of("u1"), Some(0));
}

/// A log just long enough to be paged, resumed and paged out; the second
/// resume reads its index whole (the first wrote it from the files).
fn paged(extra: usize) -> (tempfile::TempDir, EventStore, Vec<Event>, Journal) {
    let (dir, store, events) = written(PAGE_OUT_FROM + extra);
    drop(Journal::resumed(&store).unwrap());
    let (mut journal, problems) = Journal::resumed(&store).unwrap();
    assert!(problems.is_empty());
    journal.page_out(&store);
    assert!(journal.is_paged(), "a long log leaves its heads on disk");
    assert!(journal.heads.is_empty());
    (dir, store, events, journal)
}

#[test]
fn a_long_resumed_log_reads_its_heads_from_disk_and_gives_the_same_answers() {
    let (_dir, store, events, journal) = paged(300);
    let n = events.len();
    assert_eq!(journal.len(), n);
    let heads = journal.view();
    assert_eq!(heads.len(), n);
    let head = heads.get(700).unwrap();
    assert_eq!(head.id(), events[700].id);
    assert_eq!(head.parent_id(&[]), Some(events[699].id.as_str()));
    assert_eq!(head.timestamp(), events[700].timestamp);
    assert!(heads.get(n).is_none());
    assert_eq!(heads.position_of(&events[1000].id), Some(1000));
    assert_eq!(heads.position_of("nowhere"), None);

    // Walked from either end, and from both at once across chunks.
    let forward: Vec<(usize, String)> = heads.iter().map(|(i, h)| (i, h.id().into())).collect();
    let expected: Vec<(usize, String)> = events.iter().map(|e| e.id.clone()).enumerate().collect();
    assert_eq!(forward, expected);
    let mut backward: Vec<(usize, String)> = heads
        .iter()
        .rev()
        .map(|(i, h)| (i, h.id().into()))
        .collect();
    backward.reverse();
    assert_eq!(backward, expected);
    let mut walk = heads.range(100..1200);
    assert_eq!(walk.len(), 1100);
    let (mut front, mut back) = (Vec::new(), Vec::new());
    while let Some((i, h)) = walk.next() {
        front.push((i, h.id().to_string()));
        if let Some((j, h)) = walk.next_back() {
            back.push((j, h.id().to_string()));
        }
    }
    back.reverse();
    front.extend(back);
    assert_eq!(front, expected[100..1200]);
    assert!(heads.into_failure().is_none());

    assert_eq!(journal.index_of(&events[5].id), Some(5));
    let page = journal
        .read(Some(&store), &[1200, 1201, 3, n])
        .run()
        .unwrap();
    assert_eq!(
        page,
        vec![
            events[1200].clone(),
            events[1201].clone(),
            events[3].clone()
        ]
    );
    assert_eq!(journal.all_heads().unwrap().len(), n);
}

#[test]
fn loading_a_paged_log_brings_its_heads_back_into_memory() {
    let (_dir, store, events, mut journal) = paged(10);
    assert!(journal.load(&store).is_empty());
    assert!(!journal.is_paged());
    assert_eq!(journal.events(), events.as_slice());
    assert_eq!(journal.held().len(), events.len());
    assert_eq!(journal.index_of(&events[1030].id), Some(1030));
    let next = Event::new(EventBody::Pause);
    journal.push(next.clone(), events.len());
    assert_eq!(journal.index_of(&next.id), Some(events.len()));
}

#[test]
fn a_short_log_keeps_its_heads_in_memory() {
    let (_dir, store, _) = written(PAGE_OUT_FROM - 1);
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    journal.page_out(&store);
    assert!(!journal.is_paged());
    assert_eq!(journal.held().len(), PAGE_OUT_FROM - 1);
}

#[test]
fn a_head_index_replaced_under_a_paged_log_is_reported_and_the_files_still_load() {
    let (_dir, store, events, mut journal) = paged(5);
    let index = store
        .dir()
        .join(crate::conversation::event_store::HEAD_INDEX_FILE);
    // The same bytes in another file put in its place.
    let bytes = fs::read(&index).unwrap();
    crate::fsutil::write_atomic(&index, &bytes, Durability::Batched).unwrap();

    let heads = journal.view();
    assert_eq!(heads.iter().count(), 0, "nothing is read from another file");
    assert!(heads.into_failure().is_some(), "and the walk says why");
    assert_eq!(journal.index_of(&events[3].id), None);
    assert!(matches!(
        journal.read(Some(&store), &[1, 2]),
        EventRead::Failed(_)
    ));

    let problems = journal.load(&store);
    assert_eq!(problems.len(), 1, "the index's failure: {problems:?}");
    assert_eq!(journal.events(), events.as_slice());
    assert_eq!(journal.index_of(&events[3].id), Some(3));
}

#[test]
fn a_paged_log_knows_its_latest_state_updates_without_reading_the_index() {
    let (_dir, store, events) = written(PAGE_OUT_FROM);
    let n = events.len();
    for (at, key) in [(n, "goal"), (n + 1, "task:1"), (n + 2, "goal")] {
        let update = crate::conversation::core::state_update(key, serde_json::json!(at));
        store.append(at, &update).unwrap();
    }
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    let held = journal.view();
    let expected: Vec<Option<usize>> = ["goal", "task:1", "never"]
        .iter()
        .map(|key| held.last_state_update(key))
        .collect();
    assert_eq!(expected, [Some(n + 2), Some(n + 1), None]);
    journal.page_out(&store);
    assert!(journal.is_paged());
    // With the index gone, the answers still come: they are in memory.
    fs::remove_file(
        store
            .dir()
            .join(crate::conversation::event_store::HEAD_INDEX_FILE),
    )
    .unwrap();
    let paged = journal.view();
    let found: Vec<Option<usize>> = ["goal", "task:1", "never"]
        .iter()
        .map(|key| paged.last_state_update(key))
        .collect();
    assert_eq!(found, expected);
    assert!(paged.into_failure().is_none());
}

/// A log of `PAGE_OUT_FROM + 200` messages but for two pauses, in the
/// third run of heads (256..384) and the ninth (1024..1152), resumed once
/// so that its head index is written.
fn with_two_pauses() -> (tempfile::TempDir, EventStore, Vec<Event>) {
    let (dir, store, mut events) = written(PAGE_OUT_FROM + 200);
    for at in [300, 1100] {
        let mut pause = Event::with_source(SourceType::Agent, EventBody::Pause);
        pause.timestamp = events[at].timestamp.clone();
        pause.id = events[at].id.clone();
        pause.parent_id = events[at].parent_id.clone();
        store.append(at, &pause).unwrap();
        events[at] = pause;
    }
    drop(Journal::resumed(&store).unwrap());
    (dir, store, events)
}

/// Writes over the middle of `store`'s head index: the sixth run of heads
/// or so, far from both pauses of [`with_two_pauses`].
fn damage_middle_of_index(store: &EventStore) {
    use std::os::unix::fs::FileExt;
    let index = store
        .dir()
        .join(crate::conversation::event_store::HEAD_INDEX_FILE);
    let file = fs::OpenOptions::new().write(true).open(&index).unwrap();
    let middle = file.metadata().unwrap().len() / 2;
    file.write_all_at(&[0xff; 64], middle).unwrap();
}

#[test]
fn a_filtered_walk_of_a_paged_log_reads_only_the_runs_that_may_match() {
    use crate::conversation::HeadSummary;
    use openhands_wire::event::kinds;

    let (_dir, store, events) = with_two_pauses();
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    journal.page_out(&store);
    assert!(journal.is_paged());

    let pauses = |s: &HeadSummary| s.count(Some(&|k| k == kinds::PAUSE), |_| true) != Some(0);
    let runs: Vec<usize> = (256..384).chain(1024..1152).collect();
    let heads = journal.view();
    let forward: Vec<usize> = heads
        .candidates(0..heads.len(), &pauses)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(forward, runs);
    let mut backward: Vec<usize> = heads
        .candidates(0..heads.len(), &pauses)
        .rev()
        .map(|(i, h)| {
            assert_eq!(h.id(), events[i].id);
            i
        })
        .collect();
    backward.reverse();
    assert_eq!(backward, runs);
    // From the middle of a run, as a page starting at an event does.
    let from: Vec<usize> = heads
        .candidates(300..1100, &pauses)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(from, (300..384).chain(1024..1100).collect::<Vec<_>>());
    let none = |_: &HeadSummary| false;
    assert_eq!(heads.candidates(0..heads.len(), &none).count(), 0);
    assert!(heads.into_failure().is_none());

    // A run passed over is not read: damage the middle of the index (the
    // sixth run or so), far from both pauses.
    damage_middle_of_index(&store);
    let heads = journal.view();
    let found: Vec<usize> = heads
        .candidates(0..heads.len(), &pauses)
        .filter(|(_, h)| h.kind() == kinds::PAUSE)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(found, [300, 1100]);
    assert!(heads.into_failure().is_none());
    let heads = journal.view();
    assert!(heads.iter().count() < events.len());
    assert!(
        heads.into_failure().is_some(),
        "a full walk reads the damage"
    );
}

#[test]
fn a_count_of_a_paged_log_reads_only_the_runs_its_summaries_cannot_answer() {
    use crate::conversation::HeadSummary;
    use openhands_wire::event::kinds;

    let (_dir, store, events) = with_two_pauses();
    let messages = events.len() - 2;
    let is_message = |h: &EventHead| h.kind() == kinds::MESSAGE;
    // Held in memory: every head is tested, whatever the tally.
    let (held, _) = Journal::resumed(&store).unwrap();
    let unknown = |_: &HeadSummary| None;
    assert_eq!(held.view().count(&unknown, &is_message), messages);
    drop(held);
    let (mut journal, _) = Journal::resumed(&store).unwrap();
    journal.page_out(&store);
    assert!(journal.is_paged());
    let by_kind = |s: &HeadSummary| s.count(Some(&|k| k == kinds::MESSAGE), |_| true);
    let without_pauses = |s: &HeadSummary| {
        (s.count(Some(&|k| k == kinds::PAUSE), |_| true) == Some(0)).then(|| s.len())
    };
    for tally in [
        &by_kind as &dyn Fn(&HeadSummary) -> Option<usize>,
        &without_pauses,
        &unknown,
    ] {
        let heads = journal.view();
        assert_eq!(heads.count(tally, &is_message), messages);
        assert!(heads.into_failure().is_none());
    }

    // Damage the middle of the index (the sixth run or so), far from both
    // pauses: a count the summaries answer there never reads it.
    damage_middle_of_index(&store);
    for tally in [
        &by_kind as &dyn Fn(&HeadSummary) -> Option<usize>,
        &without_pauses,
    ] {
        let heads = journal.view();
        assert_eq!(heads.count(tally, &is_message), messages);
        assert!(heads.into_failure().is_none());
    }
    let heads = journal.view();
    assert!(heads.count(&unknown, &is_message) < messages);
    assert!(
        heads.into_failure().is_some(),
        "a count that reads every run reads the damage"
    );
}
