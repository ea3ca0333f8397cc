//! Bash events on disk: one JSON file per event, named
//! `<YYYYmmddHHMMSSffffff>_<kind>[_<command hex>]_<event hex>` so that a
//! name comparison is a time comparison (the reference's layout).
//!
//! Every function here does blocking I/O; callers run them with
//! `spawn_blocking`.

use openhands_protocol::bash::{BashEvent, BashEventPage, BashEventSortOrder, UtcTime};
use openhands_sdk::fsutil::{Durability, write_atomic};
use std::path::{Path, PathBuf};

/// Filters of a search.
#[derive(Debug, Clone, Default)]
pub struct SearchFilter {
    /// Only this kind (`BashCommand`, `BashOutput`).
    pub kind: Option<String>,
    /// Only outputs of this command (32 hex).
    pub command_id: Option<String>,
    /// Only events at or after this time.
    pub timestamp_gte: Option<UtcTime>,
    /// Only events before this time.
    pub timestamp_lt: Option<UtcTime>,
    /// Only outputs whose `order` is greater than this.
    pub order_gt: Option<i64>,
    /// Result order.
    pub sort_order: BashEventSortOrder,
    /// Resume at this file name (a previous `next_page_id`).
    pub page_id: Option<String>,
    /// Page size.
    pub limit: usize,
}

/// The directory holding one scope's bash events.
#[derive(Debug, Clone)]
pub struct BashEventStore {
    dir: PathBuf,
}

impl BashEventStore {
    /// A store in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes one event (pretty JSON, like the reference) crash-safely.
    pub fn save(&self, event: &BashEvent) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let text = serde_json::to_string_pretty(event).map_err(std::io::Error::other)?;
        write_atomic(
            &self.dir.join(event.file_name()),
            text.as_bytes(),
            Durability::Batched,
        )
    }

    fn names(&self) -> std::io::Result<Vec<String>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry?;
            if let Ok(name) = entry.file_name().into_string()
                && !name.starts_with('.')
            {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn load(&self, name: &str) -> Option<BashEvent> {
        let text = std::fs::read_to_string(self.dir.join(name)).ok()?;
        match serde_json::from_str(&text) {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::error!(file = name, error = %e, "unreadable bash event file");
                None
            }
        }
    }

    /// The event whose file name ends with `_<event_id>`.
    pub fn get(&self, event_id: &str) -> std::io::Result<Option<BashEvent>> {
        if event_id.is_empty() || event_id.contains(['/', '\\']) {
            return Ok(None);
        }
        let suffix = format!("_{event_id}");
        for name in self.names()? {
            if name.ends_with(&suffix) {
                return Ok(self.load(&name));
            }
        }
        Ok(None)
    }

    /// One page of events matching `filter`.
    pub fn search(&self, filter: &SearchFilter) -> std::io::Result<BashEventPage> {
        let gte = filter.timestamp_gte.map(|t| t.file_prefix());
        let lt = filter.timestamp_lt.map(|t| t.file_prefix());
        let mut matched: Vec<String> = self
            .names()?
            .into_iter()
            .filter(|name| {
                if gte.as_ref().is_some_and(|g| name.as_str() < g.as_str()) {
                    return false;
                }
                if lt.as_ref().is_some_and(|l| name.as_str() >= l.as_str()) {
                    return false;
                }
                if filter.kind.is_none() && filter.command_id.is_none() {
                    return true;
                }
                let parts: Vec<&str> = name.split('_').collect();
                if let Some(kind) = &filter.kind
                    && parts.get(1) != Some(&kind.as_str())
                {
                    return false;
                }
                if let Some(command) = &filter.command_id
                    && (parts.len() < 4 || parts[2] != command)
                {
                    return false;
                }
                true
            })
            .collect();
        matched.sort();
        if filter.sort_order == BashEventSortOrder::TimestampDesc {
            matched.reverse();
        }
        let start = filter
            .page_id
            .as_ref()
            .and_then(|p| matched.iter().position(|n| n == p))
            .unwrap_or(0);
        let mut items = Vec::new();
        let mut next_page_id = None;
        for name in &matched[start..] {
            let Some(event) = self.load(name) else {
                continue;
            };
            if let (Some(gt), BashEvent::Output(o)) = (filter.order_gt, &event)
                && o.order <= gt
            {
                continue;
            }
            if items.len() >= filter.limit {
                next_page_id = Some(name.clone());
                break;
            }
            items.push(event);
        }
        Ok(BashEventPage {
            items,
            next_page_id,
        })
    }

    /// Deletes every event; returns how many files were removed.
    pub fn clear(&self) -> std::io::Result<usize> {
        let mut count = 0;
        for name in self.names()? {
            match std::fs::remove_file(self.dir.join(&name)) {
                Ok(()) => count += 1,
                Err(e) => tracing::error!(file = %name, error = %e, "cannot delete bash event"),
            }
        }
        Ok(count)
    }

    /// Deletes events older than `cutoff`; returns how many were removed.
    pub fn delete_older_than(&self, cutoff: UtcTime) -> std::io::Result<usize> {
        let cutoff = cutoff.file_prefix();
        let mut names = self.names()?;
        names.sort();
        let mut count = 0;
        for name in names {
            if name >= cutoff {
                break;
            }
            if std::fs::remove_file(self.dir.join(&name)).is_ok() {
                count += 1;
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use openhands_protocol::bash::{BashCommand, BashOutput, ExecuteBashRequest, HexId};

    fn output(command: HexId, order: i64, at: &str) -> BashEvent {
        let mut o = BashOutput::new(command, order, None, Some(format!("o{order}")), None);
        o.timestamp = UtcTime::parse(at).unwrap();
        BashEvent::Output(o)
    }

    #[test]
    fn saves_searches_pages_and_clears() {
        let dir = tempfile::tempdir().unwrap();
        let store = BashEventStore::new(dir.path().join("ev"));
        let req = ExecuteBashRequest {
            command: "x".into(),
            cwd: None,
            timeout: 5,
        };
        let mut cmd = BashCommand::from_request(&req, None);
        cmd.timestamp = UtcTime::parse("2026-01-01T00:00:00.000001Z").unwrap();
        let cid = cmd.id;
        store.save(&BashEvent::Command(cmd.clone())).unwrap();
        for i in 0..5 {
            store
                .save(&output(cid, i, &format!("2026-01-01T00:00:0{}.5Z", i + 1)))
                .unwrap();
        }
        let all = store
            .search(&SearchFilter {
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(all.items.len(), 6);
        assert!(matches!(all.items[0], BashEvent::Command(_)));

        let page = store
            .search(&SearchFilter {
                kind: Some("BashOutput".into()),
                command_id: Some(cid.hex()),
                limit: 2,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.items.len(), 2);
        let next = page.next_page_id.clone().unwrap();
        let page2 = store
            .search(&SearchFilter {
                kind: Some("BashOutput".into()),
                command_id: Some(cid.hex()),
                limit: 2,
                page_id: Some(next),
                ..Default::default()
            })
            .unwrap();
        let BashEvent::Output(o) = &page2.items[0] else {
            panic!()
        };
        assert_eq!(o.order, 2);

        let newer = store
            .search(&SearchFilter {
                order_gt: Some(3),
                sort_order: BashEventSortOrder::TimestampDesc,
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        // the command (no order) and output 4
        assert_eq!(newer.items.len(), 2);
        assert!(matches!(newer.items[1], BashEvent::Command(_)));

        let window = store
            .search(&SearchFilter {
                timestamp_gte: UtcTime::parse("2026-01-01T00:00:02Z"),
                timestamp_lt: UtcTime::parse("2026-01-01T00:00:04Z"),
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(window.items.len(), 2);

        assert_eq!(
            store.get(&cid.hex()).unwrap(),
            Some(BashEvent::Command(cmd))
        );
        assert_eq!(store.get("nope").unwrap(), None);
        assert_eq!(store.get("../x").unwrap(), None);

        let cutoff = UtcTime(UtcTime::parse("2026-01-01T00:00:03Z").unwrap().0 - Duration::zero());
        assert_eq!(store.delete_older_than(cutoff).unwrap(), 3);
        assert_eq!(store.clear().unwrap(), 3);
        assert_eq!(store.clear().unwrap(), 0);
    }

    #[test]
    fn missing_directory_is_empty() {
        let store = BashEventStore::new("/nonexistent/openhands/bash");
        assert!(
            store
                .search(&SearchFilter {
                    limit: 10,
                    ..Default::default()
                })
                .unwrap()
                .items
                .is_empty()
        );
        assert_eq!(store.clear().unwrap(), 0);
    }
}
