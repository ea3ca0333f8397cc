//! A bounded cache of the `ConversationInfo` of stored conversations that
//! are not loaded, so that listing a page of them (or `GET` of one) does
//! not read and parse their `meta.json` and `base_state.json` again when
//! neither changed.
//!
//! An entry is valid while both files have the identity they had when it
//! was built ([`Stamp`]: inode, size and modification time of each, two
//! `stat` calls): every write of either file goes through an atomic rename
//! (a new inode), and a file replaced behind the server's back changes at
//! least its inode or time. What is cached is the info as built for the
//! API with no sub-conversations and the agent context's skills emptied,
//! plus the skills themselves; the caller fills in the parts that depend on
//! the request or on the rest of the catalog.

use super::stored::META_FILE;
use lru::LruCache;
use openhands_protocol::conversation_info::ConversationInfo;
use parking_lot::Mutex;
use serde_json::Value;
use std::num::NonZeroUsize;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

/// How many conversations the cache holds (least recently used dropped
/// first): a few pages of the most common listings, a few MB at most.
pub const CAPACITY: usize = 256;

/// The state file of a conversation directory.
const STATE_FILE: &str = "base_state.json";

/// Identity of one file: inode, size, modification time (s, ns).
type FileId = (u64, u64, i64, i64);

/// Identity of a conversation's two files when an entry was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    meta: FileId,
    state: FileId,
}

impl Stamp {
    /// The current stamp of the conversation stored in `dir` (`None` when
    /// either file is missing or cannot be examined).
    pub fn of(dir: &Path) -> Option<Self> {
        let id = |name: &str| {
            std::fs::metadata(dir.join(name))
                .ok()
                .map(|m| (m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        };
        Some(Self {
            meta: id(META_FILE)?,
            state: id(STATE_FILE)?,
        })
    }
}

/// What is kept of one conversation.
pub struct Cached {
    /// The info with `sub_conversation_ids` empty, `runtime_info` set and
    /// the agent context's skills emptied.
    pub info: ConversationInfo,
    /// The agent context's skills as stored (`None` when it has none).
    pub skills: Option<Value>,
}

/// The cache (thread-safe; cheap lookups under a short lock).
pub struct InfoCache {
    entries: Mutex<LruCache<Uuid, (Stamp, Arc<Cached>)>>,
}

impl Default for InfoCache {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl std::fmt::Debug for InfoCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfoCache")
            .field("entries", &self.entries.lock().len())
            .finish()
    }
}

impl InfoCache {
    /// A cache of at most `capacity` conversations (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(LruCache::new(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// The entry of `id` if it was built from files with `stamp`.
    pub fn get(&self, id: Uuid, stamp: Stamp) -> Option<Arc<Cached>> {
        let mut entries = self.entries.lock();
        match entries.get(&id) {
            Some((s, cached)) if *s == stamp => Some(cached.clone()),
            _ => None,
        }
    }

    /// Records the entry of `id`, built from files with `stamp`.
    pub fn put(&self, id: Uuid, stamp: Stamp, cached: Arc<Cached>) {
        self.entries.lock().put(id, (stamp, cached));
    }

    /// Drops the entry of `id` (loaded or deleted: its files are no longer
    /// what answers for it).
    pub fn forget(&self, id: Uuid) {
        self.entries.lock().pop(&id);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::conversations::info::conversation_info;
    use crate::service::conversations::stored::StoredConversation;
    use serde_json::json;

    fn write(dir: &Path, title: &str) {
        std::fs::write(dir.join(META_FILE), title).unwrap();
        std::fs::write(dir.join(STATE_FILE), "{}").unwrap();
    }

    fn cached() -> Arc<Cached> {
        let meta = StoredConversation::new(Uuid::new_v4(), json!({"working_dir": "/w"}));
        Arc::new(Cached {
            info: conversation_info(json!({}), &meta, &[], true),
            skills: None,
        })
    }

    #[test]
    fn an_entry_is_valid_until_a_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a");
        let cache = InfoCache::with_capacity(2);
        let id = Uuid::new_v4();
        let stamp = Stamp::of(dir.path()).unwrap();
        assert!(cache.get(id, stamp).is_none());
        cache.put(id, stamp, cached());
        assert!(cache.get(id, Stamp::of(dir.path()).unwrap()).is_some());
        // Replaced as the server writes it: a new file renamed over the old.
        std::fs::write(dir.path().join("new"), "b").unwrap();
        #[allow(clippy::disallowed_methods)]
        std::fs::rename(dir.path().join("new"), dir.path().join(META_FILE)).unwrap();
        assert!(cache.get(id, Stamp::of(dir.path()).unwrap()).is_none());
        std::fs::remove_file(dir.path().join(STATE_FILE)).unwrap();
        assert!(Stamp::of(dir.path()).is_none());
    }

    #[test]
    fn the_least_recently_used_entry_leaves_first() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a");
        let stamp = Stamp::of(dir.path()).unwrap();
        let cache = InfoCache::with_capacity(2);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        cache.put(a, stamp, cached());
        cache.put(b, stamp, cached());
        assert!(cache.get(a, stamp).is_some());
        cache.put(c, stamp, cached());
        assert!(cache.get(b, stamp).is_none());
        assert!(cache.get(a, stamp).is_some());
        cache.forget(a);
        assert_eq!(cache.len(), 1);
    }
}
