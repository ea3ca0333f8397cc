//! [`Heads`]: a reader's view of the heads of a log, whether they are held
//! in memory or paged from the head index (see [`super::paged_heads`]).

use super::event_head::EventHead;
use super::event_store::StoreError;
use super::head_summary::HeadSummary;
use super::id_index::IdIndex;
use super::paged_heads::{PagedHeads, RUN};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;

/// The heads of every event of a log, in log order (see
/// [`crate::conversation::LocalConversation::with_heads`]).
///
/// A long resumed log keeps its heads on disk; they are read as they are
/// walked. Such a read can fail (the disk, or a file changed behind the
/// server's back): the walk then ends early and the failure is reported by
/// the call that lent the view, so a caller never takes a walk cut short
/// for the whole log.
pub struct Heads<'a> {
    source: Source<'a>,
    ids: &'a IdIndex,
    failure: RefCell<Option<StoreError>>,
}

#[derive(Clone, Copy)]
enum Source<'a> {
    Held(&'a [EventHead]),
    Paged(&'a PagedHeads),
}

impl<'a> Heads<'a> {
    /// A view of heads held in memory.
    pub(super) fn held(heads: &'a [EventHead], ids: &'a IdIndex) -> Self {
        Self::new(Source::Held(heads), ids)
    }

    /// A view of heads paged from disk.
    pub(super) fn paged(heads: &'a PagedHeads, ids: &'a IdIndex) -> Self {
        Self::new(Source::Paged(heads), ids)
    }

    fn new(source: Source<'a>, ids: &'a IdIndex) -> Self {
        Self {
            source,
            ids,
            failure: RefCell::new(None),
        }
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        match self.source {
            Source::Held(heads) => heads.len(),
            Source::Paged(paged) => paged.len(),
        }
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The head at `position`.
    pub fn get(&self, position: usize) -> Option<Cow<'a, EventHead>> {
        match self.source {
            Source::Held(heads) => heads.get(position).map(Cow::Borrowed),
            Source::Paged(paged) if position < paged.len() => {
                self.kept(paged.get(position)).map(Cow::Owned)
            }
            Source::Paged(_) => None,
        }
    }

    /// The position in the log of the event `id` (the newer one when an id
    /// is there twice).
    pub fn position_of(&self, id: &str) -> Option<usize> {
        match self.source {
            Source::Held(heads) => self.ids.find(heads, id),
            Source::Paged(paged) => self.ids.find_with(id, |position| {
                self.kept(paged.get(position)).is_some_and(|h| h.id() == id)
            }),
        }
    }

    /// The position of the latest `ConversationStateUpdateEvent` setting
    /// `key`.
    pub fn last_state_update(&self, key: &str) -> Option<usize> {
        match self.source {
            Source::Held(heads) => heads.iter().rposition(|h| h.state_key() == Some(key)),
            Source::Paged(paged) => paged.last_state_update(key),
        }
    }

    /// Every head with its position, in log order (reversible).
    pub fn iter(&self) -> HeadIter<'_, 'a> {
        self.range(0..self.len())
    }

    /// The heads at `range` (clamped to the log) with their positions.
    pub fn range(&self, range: Range<usize>) -> HeadIter<'_, 'a> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        HeadIter {
            view: self,
            front: Buffer::empty(start),
            unread: start..end,
            back: Buffer::empty(end),
            may_match: None,
        }
    }

    /// The heads at `range` (clamped to the log) with their positions,
    /// but for those of a paged log in runs whose [`HeadSummary`]
    /// `may_match` rules out: for a walk that tests every head anyway,
    /// and so need not read from disk the runs where nothing can pass. A
    /// log held in memory yields every head.
    pub fn candidates<'v>(
        &'v self,
        range: Range<usize>,
        may_match: &'v dyn Fn(&HeadSummary) -> bool,
    ) -> Candidates<'v, 'a> {
        let mut walk = self.range(range);
        walk.may_match = Some(may_match);
        Candidates(walk)
    }

    /// Number of heads for which `matches` holds. Of a paged log, a run
    /// for which `tally` gives the number of its matches from its
    /// [`HeadSummary`] is not read; the others are read and tested head
    /// by head. A log held in memory tests every head.
    pub fn count(
        &self,
        tally: &dyn Fn(&HeadSummary) -> Option<usize>,
        matches: &dyn Fn(&EventHead) -> bool,
    ) -> usize {
        let Source::Paged(paged) = self.source else {
            return self.iter().filter(|(_, head)| matches(head)).count();
        };
        let mut total = 0;
        for start in (0..paged.len()).step_by(RUN) {
            if let Some(n) = paged.summary_at(start).and_then(tally) {
                total += n;
                continue;
            }
            let end = (start + RUN).min(paged.len());
            let Some(heads) = self.kept(paged.read(start..end)) else {
                break;
            };
            total += heads.iter().filter(|head| matches(head)).count();
        }
        total
    }

    /// Whether the run of heads holding `position` is known to hold
    /// nothing `may_match` lets through.
    fn passes_over(
        &self,
        position: usize,
        may_match: Option<&dyn Fn(&HeadSummary) -> bool>,
    ) -> bool {
        match (self.source, may_match) {
            (Source::Paged(paged), Some(may_match)) => {
                paged.summary_at(position).is_some_and(|s| !may_match(s))
            }
            _ => false,
        }
    }

    /// What the view failed to read, if anything.
    pub(super) fn into_failure(self) -> Option<StoreError> {
        self.failure.into_inner()
    }

    /// `result`'s value; a failure is kept (the first one) for
    /// [`Heads::into_failure`].
    fn kept<T>(&self, result: Result<T, StoreError>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                self.failure.borrow_mut().get_or_insert(e);
                None
            }
        }
    }

    /// The heads at `range`, borrowed when held.
    fn chunk(&self, range: Range<usize>) -> Option<Vec<Cow<'a, EventHead>>> {
        match self.source {
            Source::Held(heads) => Some(heads.get(range)?.iter().map(Cow::Borrowed).collect()),
            Source::Paged(paged) => {
                let heads = self.kept(paged.read(range))?;
                Some(heads.into_iter().map(Cow::Owned).collect())
            }
        }
    }
}

/// Heads read but not yet yielded, with the position of the first.
struct Buffer<'a> {
    heads: std::collections::VecDeque<Cow<'a, EventHead>>,
    first: usize,
}

impl<'a> Buffer<'a> {
    fn empty(at: usize) -> Self {
        Self {
            heads: Default::default(),
            first: at,
        }
    }

    fn pop_front(&mut self) -> Option<(usize, Cow<'a, EventHead>)> {
        let head = self.heads.pop_front()?;
        self.first += 1;
        Some((self.first - 1, head))
    }

    fn pop_back(&mut self) -> Option<(usize, Cow<'a, EventHead>)> {
        let head = self.heads.pop_back()?;
        Some((self.first + self.heads.len(), head))
    }
}

/// A walk over some of a log's heads, yielding each with its position;
/// heads on disk are read a run of [`RUN`] at a time (runs start at
/// multiples of it) from whichever end is walked.
pub struct HeadIter<'v, 'a> {
    view: &'v Heads<'a>,
    front: Buffer<'a>,
    /// Positions not read yet.
    unread: Range<usize>,
    back: Buffer<'a>,
    /// Which runs are worth reading ([`Heads::candidates`]); `None`: all.
    may_match: Option<&'v dyn Fn(&HeadSummary) -> bool>,
}

impl<'a> HeadIter<'_, 'a> {
    /// Reads `range` into a buffer; on a failure the walk ends.
    fn fill(&mut self, range: Range<usize>) -> Option<Buffer<'a>> {
        match self.view.chunk(range.clone()) {
            Some(heads) => Some(Buffer {
                heads: heads.into(),
                first: range.start,
            }),
            None => {
                self.unread = self.unread.end..self.unread.end;
                self.front.heads.clear();
                self.back.heads.clear();
                None
            }
        }
    }
}

impl<'a> Iterator for HeadIter<'_, 'a> {
    type Item = (usize, Cow<'a, EventHead>);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(item) = self.front.pop_front() {
            return Some(item);
        }
        while !self.unread.is_empty() {
            let start = self.unread.start;
            let end = ((start / RUN + 1) * RUN).min(self.unread.end);
            if self.view.passes_over(start, self.may_match) {
                self.unread.start = end;
                continue;
            }
            self.front = self.fill(start..end)?;
            self.unread.start = end;
            if let Some(item) = self.front.pop_front() {
                return Some(item);
            }
        }
        self.back.pop_front()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.front.heads.len() + self.unread.len() + self.back.heads.len();
        match self.may_match {
            None => (len, Some(len)),
            Some(_) => (self.front.heads.len() + self.back.heads.len(), Some(len)),
        }
    }
}

impl DoubleEndedIterator for HeadIter<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(item) = self.back.pop_back() {
            return Some(item);
        }
        while !self.unread.is_empty() {
            let end = self.unread.end;
            let start = ((end - 1) / RUN * RUN).max(self.unread.start);
            if self.view.passes_over(start, self.may_match) {
                self.unread.end = start;
                continue;
            }
            self.back = self.fill(start..end)?;
            self.unread.end = start;
            if let Some(item) = self.back.pop_back() {
                return Some(item);
            }
        }
        self.front.pop_back()
    }
}

/// A walk of [`Heads::range`] yields every head of its range (a filtered
/// one is a [`Candidates`]).
impl ExactSizeIterator for HeadIter<'_, '_> {}

/// The walk of [`Heads::candidates`]: some heads, with their positions,
/// among which every match is (reversible).
pub struct Candidates<'v, 'a>(HeadIter<'v, 'a>);

impl<'a> Iterator for Candidates<'_, 'a> {
    type Item = (usize, Cow<'a, EventHead>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Candidates<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}
