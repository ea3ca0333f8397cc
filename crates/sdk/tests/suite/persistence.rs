//! The persistence guarantees: an event is on disk before any listener or
//! reader sees it, a change that could not be written is not seen at all,
//! and the agent loop never writes on the async runtime's threads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::conversation::EventCallback;
use openhands_sdk::conversation::event_store::{HEAD_INDEX_FILE, parse_event_file_name};
use openhands_sdk::{ConversationError, LocalConversation};
use openhands_wire::event::Event;
use openhands_wire::state::ExecutionStatus;
use parking_lot::Mutex;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::ThreadId;

/// The event file holding `event`, if any.
fn event_file(events_dir: &Path, event: &Event) -> Option<PathBuf> {
    std::fs::read_dir(events_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_event_file_name)
                .is_some_and(|(_, id)| id == event.id)
        })
}

/// Per event a listener saw: its id and what its file held at that moment.
type Sightings = Arc<Mutex<Vec<(String, Option<Event>)>>>;

fn base_state(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("base_state.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn listeners_see_an_event_only_once_its_file_is_in_place() {
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4();
    let events_dir = root.path().join(id.simple().to_string()).join("events");
    let seen: Sightings = Arc::default();
    let record = seen.clone();
    let dir = events_dir.clone();
    let cb: EventCallback = Arc::new(move |e: &Event| {
        if e.is_transient() {
            return;
        }
        let on_disk = event_file(&dir, e)
            .map(|p| serde_json::from_slice::<Event>(&std::fs::read(p).unwrap()).unwrap());
        record.lock().push((e.id.clone(), on_disk));
    });
    let (agent, _) = agent_turns(vec![echo("hi"), finish("done")]);
    let mut options = persisted(root.path());
    options.conversation_id = Some(id);
    options.listeners.callbacks.push(cb);
    let c = LocalConversation::new(agent, workspace.path(), options).unwrap();
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let events = c.events();
    let seen = seen.lock();
    assert_eq!(seen.len(), events.len());
    for ((id, on_disk), event) in seen.iter().zip(&events) {
        assert_eq!(id, &event.id);
        assert_eq!(
            on_disk.as_ref(),
            Some(event),
            "{} was not on disk",
            event.kind()
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_agent_loop_writes_nothing_on_the_runtime_thread() {
    let runtime_thread = std::thread::current().id();
    let threads: Arc<Mutex<Vec<ThreadId>>> = Arc::default();
    let record = threads.clone();
    let f = fixture(vec![echo("hi"), finish("done")], |o| {
        o.listeners.callbacks.push(Arc::new(move |e: &Event| {
            if !e.is_transient() {
                record.lock().push(std::thread::current().id());
            }
        }));
    });
    let c = &f.conversation;
    c.send_message("go").unwrap();
    threads.lock().clear();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let threads = threads.lock();
    // Prompt, status, action, observation, stats, finish, status, stats…
    assert!(threads.len() >= 8, "{}", threads.len());
    assert!(
        threads.iter().all(|t| *t != runtime_thread),
        "an event was committed on the runtime's thread"
    );
}

#[tokio::test]
async fn a_change_that_cannot_be_written_is_not_seen() {
    let f = fixture(vec![finish("done")], |_| {});
    let c = &f.conversation;
    c.send_message("go").unwrap();
    let dir = f.root.path().join(c.id().simple().to_string());
    let events_dir = dir.join("events");
    let before_events = c.events();
    let before_disk = base_state(&dir);

    // The event directory turns into a file: every event write fails.
    std::fs::rename(&events_dir, dir.join("events.away")).unwrap();
    std::fs::write(&events_dir, b"not a directory").unwrap();
    assert!(matches!(c.pause(), Err(ConversationError::Store(_))));
    let mut tags = serde_json::Map::new();
    tags.insert("k".into(), Value::String("v".into()));
    assert!(c.set_tags(tags.clone()).is_err());

    assert_eq!(c.status(), ExecutionStatus::Idle);
    assert!(c.state().tags.is_empty());
    assert_eq!(c.events(), before_events);
    assert_eq!(base_state(&dir), before_disk);

    // Once the disk works again, changes go through and a resume loads
    // exactly what was acknowledged.
    std::fs::remove_file(&events_dir).unwrap();
    std::fs::rename(dir.join("events.away"), &events_dir).unwrap();
    c.set_tags(tags).unwrap();
    c.pause().unwrap();
    assert_eq!(c.status(), ExecutionStatus::Paused);
    assert_eq!(base_state(&dir)["execution_status"], "paused");
    assert_eq!(base_state(&dir)["tags"]["k"], "v");
    let (agent, _) = agent_turns(vec![]);
    let resumed =
        LocalConversation::resume(f.root.path(), c.id(), Some(agent), persisted(f.root.path()))
            .unwrap();
    assert_eq!(resumed.events(), c.events());
    assert_eq!(resumed.state().tags, c.state().tags);
}

#[tokio::test]
async fn a_resume_reads_the_heads_its_commits_indexed() {
    let f = fixture(vec![echo("hi"), finish("done")], |_| {});
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let ids: Vec<String> = c.events().into_iter().map(|e| e.id).collect();
    let events_dir = f
        .root
        .path()
        .join(c.id().simple().to_string())
        .join("events");
    assert!(events_dir.join(HEAD_INDEX_FILE).is_file());
    // Every event file broken: a resume that still knows each event took
    // its head from the index the commits kept.
    for entry in std::fs::read_dir(&events_dir).unwrap().flatten() {
        if entry
            .file_name()
            .to_str()
            .and_then(parse_event_file_name)
            .is_some()
        {
            std::fs::write(entry.path(), b"{").unwrap();
        }
    }
    let (agent, _) = agent_turns(vec![]);
    let resumed =
        LocalConversation::resume(f.root.path(), c.id(), Some(agent), persisted(f.root.path()))
            .unwrap();
    assert_eq!(resumed.event_count(), ids.len());
    let resumed_ids = resumed
        .with_heads(|heads| {
            heads
                .iter()
                .map(|(_, h)| h.id().to_string())
                .collect::<Vec<_>>()
        })
        .unwrap();
    assert_eq!(resumed_ids, ids);
}
