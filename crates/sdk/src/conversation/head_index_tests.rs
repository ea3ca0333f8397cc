use super::*;
use openhands_wire::event::{Event, EventBody};

/// A store in a temp dir holding `n` chained events, their files written
/// and, when `indexed`, their records appended as a commit does.
fn log(n: usize, indexed: bool) -> (tempfile::TempDir, EventStore, Vec<EventHead>) {
    let dir = tempfile::tempdir().unwrap();
    let store = EventStore::open(dir.path(), Durability::Batched).unwrap();
    let mut heads: Vec<EventHead> = Vec::new();
    for index in 0..n {
        let mut event = Event::new(if index % 2 == 0 {
            EventBody::Pause
        } else {
            EventBody::Interrupt
        });
        event.parent_id = heads.last().map(|h| h.id().to_string());
        store.append(index, &event).unwrap();
        heads.push(EventHead::of(&event, index));
    }
    if indexed {
        append(&store, &[], &heads);
    }
    (dir, store, heads)
}

/// Breaks every event file: a resume that still gives their heads took
/// them from the index.
fn break_files(store: &EventStore, heads: &[EventHead]) {
    for h in heads {
        fs::write(store.path_of(h.file, h.id()), b"{").unwrap();
    }
}

/// What `resume` gives, each head naming its parent again (as the heads
/// of `EventHead::of` do), after checking the id index against the heads.
fn resume_named(store: &EventStore) -> (Vec<EventHead>, Vec<StoreError>) {
    let Resumed {
        mut heads,
        ids,
        problems,
        records,
    } = resume(store).unwrap();
    for (position, head) in heads.iter().enumerate() {
        assert_eq!(ids.find(&heads, head.id()), Some(position));
        if position > 0 && head.parent_id(&heads) == Some(heads[position - 1].id()) {
            assert!(!head.spills(), "a parent in the log is placed: {head:?}");
        }
    }
    let records = records.expect("every head has its record where the resume says");
    assert_eq!(records.len(), heads.len() + 1);
    let bytes = index_bytes(store);
    assert_eq!(records.last().copied(), u32::try_from(bytes.len()).ok());
    for (head, span) in heads.iter().zip(records.windows(2)) {
        let record = &bytes[span[0] as usize..span[1] as usize];
        let (payload, rest) = split_record(record).expect("a whole record");
        assert!(rest.is_empty());
        let read = EventHead::decode(payload, |_| None).unwrap();
        assert_eq!((read.id(), read.file), (head.id(), head.file));
    }
    name_parents(&mut heads);
    (heads, problems)
}

fn index_bytes(store: &EventStore) -> Vec<u8> {
    fs::read(path(store)).unwrap()
}

fn fresh_index(heads: &[EventHead]) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    push_records(&mut bytes, &[], heads, |_| {});
    bytes
}

#[test]
fn a_resume_takes_the_heads_from_the_index_without_reading_the_files() {
    let (_dir, store, heads) = log(20, true);
    break_files(&store, &heads);
    let (resumed, problems) = resume_named(&store);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(resumed, heads);
}

#[test]
fn without_an_index_the_files_are_parsed_and_the_index_written() {
    let (_dir, store, heads) = log(600, false);
    let (resumed, problems) = resume_named(&store);
    assert!(problems.is_empty());
    assert_eq!(resumed, heads);
    assert_eq!(index_bytes(&store), fresh_index(&heads));
    break_files(&store, &heads);
    assert_eq!(resume_named(&store).0, heads, "the next resume uses it");
}

#[test]
fn a_cut_or_zeroed_tail_is_read_again_from_the_files_and_the_index_mended() {
    for damage in ["cut", "zeros", "flipped"] {
        let (_dir, store, heads) = log(10, true);
        let mut bytes = index_bytes(&store);
        match damage {
            "cut" => bytes.truncate(bytes.len() - 3),
            "zeros" => bytes.extend_from_slice(&[0; 64]),
            _ => {
                let last = bytes.len() - 6;
                bytes[last] ^= 0x20;
            }
        }
        fs::write(path(&store), &bytes).unwrap();
        let (resumed, problems) = resume_named(&store);
        assert!(problems.is_empty(), "{damage}: {problems:?}");
        assert_eq!(resumed, heads, "{damage}");
        assert_eq!(index_bytes(&store), fresh_index(&heads), "{damage}");
    }
}

#[test]
fn files_the_index_lacks_are_parsed_and_records_without_a_file_dropped() {
    let (_dir, store, mut heads) = log(8, true);
    // Written by something else: two more files the index does not name.
    for index in 8..10 {
        let mut event = Event::new(EventBody::Pause);
        event.parent_id = Some(heads[index - 1].id().to_string());
        store.append(index, &event).unwrap();
        heads.push(EventHead::of(&event, index));
    }
    // One file gone, one replaced by another event under its number.
    fs::remove_file(store.path_of(2, heads[2].id())).unwrap();
    fs::remove_file(store.path_of(5, heads[5].id())).unwrap();
    let other = Event::new(EventBody::Interrupt);
    store.append(5, &other).unwrap();
    heads[5] = EventHead::of(&other, 5);
    heads.remove(2);

    let (resumed, problems) = resume_named(&store);
    assert!(problems.is_empty());
    assert_eq!(resumed, heads);
    assert_eq!(index_bytes(&store), fresh_index(&heads));
}

#[test]
fn an_unreadable_file_is_reported_and_left_out_of_log_and_index() {
    let (_dir, store, mut heads) = log(4, true);
    fs::write(store.dir().join("event-00004-broken.json"), b"{").unwrap();
    let before = index_bytes(&store);
    let (resumed, problems) = resume_named(&store);
    assert_eq!(problems.len(), 1);
    assert_eq!(resumed, heads);
    assert_eq!(index_bytes(&store), before, "nothing to mend");
    // Appends after it still reach the index.
    let next = Event::new(EventBody::Pause);
    store.append(5, &next).unwrap();
    heads.push(EventHead::of(&next, 5));
    append(&store, &[], &heads[4..]);
    break_files(&store, &heads);
    fs::write(store.dir().join("event-00004-broken.json"), b"{").unwrap();
    assert_eq!(resume_named(&store).0, heads);
}

#[test]
fn the_index_is_private_and_not_an_event_file() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, store, _) = log(1, true);
    let mode = fs::metadata(path(&store)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        crate::conversation::event_store::parse_event_file_name(HEAD_INDEX_FILE),
        None
    );
    assert_eq!(store.load_all().unwrap().0.len(), 1);
}

#[test]
fn records_out_of_file_order_are_not_trusted() {
    let (_dir, store, heads) = log(6, false);
    let mut swapped = heads.clone();
    swapped.swap(1, 4);
    fs::write(path(&store), fresh_index(&swapped)).unwrap();
    let (resumed, problems) = resume_named(&store);
    assert!(problems.is_empty());
    assert_eq!(resumed, heads);
    assert_eq!(index_bytes(&store), fresh_index(&heads));
}
