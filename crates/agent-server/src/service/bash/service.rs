//! The bash event service of one scope (the server, or one conversation):
//! starts commands, stores and publishes their events, stops them, and
//! answers searches.

use super::runner::{RunEnd, StopSignals, Stream, run_command};
use super::store::{BashEventStore, SearchFilter};
use openhands_protocol::bash::{
    BashCommand, BashEvent, BashEventPage, BashOutput, ExecuteBashRequest, HexId, UtcTime,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Most live subscribers (WebSockets) one service accepts.
pub const MAX_SUBSCRIBERS: usize = 50;

/// Buffered events per subscriber before a slow one starts losing events.
const CHANNEL_CAPACITY: usize = 1024;

/// Errors of the bash service.
#[derive(Debug, thiserror::Error)]
pub enum BashServiceError {
    /// The service was closed (server shutting down).
    #[error("Bash event service is closed")]
    Closed,
    /// The subscriber limit was reached.
    #[error("Too many bash event connections")]
    TooManySubscribers,
    /// Disk access failed.
    #[error("bash event storage failed: {0}")]
    Io(#[from] std::io::Error),
    /// A background task failed.
    #[error("bash task failed: {0}")]
    Task(String),
}

struct Running {
    stop: CancellationToken,
    finished: watch::Receiver<bool>,
}

/// Commands, storage and live events of one scope.
pub struct BashEventService {
    store: BashEventStore,
    default_cwd: Option<PathBuf>,
    running: Mutex<HashMap<HexId, Running>>,
    events: broadcast::Sender<Arc<BashEvent>>,
    scans: Semaphore,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    closed: AtomicBool,
}

impl std::fmt::Debug for BashEventService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashEventService")
            .field("dir", &self.store.dir())
            .field("default_cwd", &self.default_cwd)
            .finish_non_exhaustive()
    }
}

/// A started command: its event and the task running it.
pub struct Started {
    /// The `BashCommand` event.
    pub command: BashCommand,
    /// Resolves to every output event of the command when it ends.
    pub task: JoinHandle<Vec<BashOutput>>,
}

impl BashEventService {
    /// A service storing events in `dir`; commands without a `cwd` run in
    /// `default_cwd` (or the server's working directory).
    pub fn new(dir: impl Into<PathBuf>, default_cwd: Option<PathBuf>) -> Self {
        let (events, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            store: BashEventStore::new(dir),
            default_cwd,
            running: Mutex::new(HashMap::new()),
            events,
            scans: Semaphore::new(1),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// The directory events are stored in.
    pub fn dir(&self) -> PathBuf {
        self.store.dir().to_path_buf()
    }

    /// The directory commands run in by default (a conversation's workspace).
    pub fn default_cwd(&self) -> Option<&PathBuf> {
        self.default_cwd.as_ref()
    }

    async fn save_and_publish(&self, event: BashEvent) {
        let store = self.store.clone();
        let saved = event.clone();
        match tokio::task::spawn_blocking(move || store.save(&saved)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "cannot store bash event"),
            Err(e) => tracing::error!(error = %e, "bash event writer failed"),
        }
        let _ = self.events.send(Arc::new(event));
    }

    /// Starts `request` in the background and returns its `BashCommand`.
    pub async fn start(
        self: &Arc<Self>,
        request: ExecuteBashRequest,
    ) -> Result<Started, BashServiceError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(BashServiceError::Closed);
        }
        let cwd = request
            .cwd
            .clone()
            .or_else(|| self.default_cwd.as_ref().map(|p| p.display().to_string()));
        let command = BashCommand::from_request(&request, cwd);
        self.save_and_publish(BashEvent::Command(command.clone()))
            .await;

        let stop = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        self.running.lock().insert(
            command.id,
            Running {
                stop: stop.clone(),
                finished: done_rx,
            },
        );
        let service = Arc::clone(self);
        let cmd = command.clone();
        let task = self.tasks.spawn(async move {
            let outputs = service.execute(&cmd, stop).await;
            service.running.lock().remove(&cmd.id);
            let _ = done_tx.send(true);
            outputs
        });
        Ok(Started { command, task })
    }

    async fn execute(&self, command: &BashCommand, stop: CancellationToken) -> Vec<BashOutput> {
        let signals = StopSignals {
            stop,
            shutdown: self.shutdown.clone(),
        };
        let timeout = Duration::from_secs(u64::try_from(command.timeout).unwrap_or(0));
        let cwd = command.cwd.as_ref().map(PathBuf::from);
        let (tx, mut rx) = mpsc::channel::<(Stream, String)>(4);
        let run = run_command(&command.command, cwd.as_deref(), timeout, &signals, tx);
        let publish = async {
            let mut outputs = Vec::new();
            let mut order = 0i64;
            while let Some((stream, piece)) = rx.recv().await {
                let (out, err) = match stream {
                    Stream::Stdout => (Some(piece), None),
                    Stream::Stderr => (None, Some(piece)),
                };
                let event = BashOutput::new(command.id, order, None, out, err);
                order += 1;
                outputs.push(event.clone());
                self.save_and_publish(BashEvent::Output(event)).await;
            }
            (outputs, order)
        };
        let ((stdout, stderr, end), (mut outputs, order)) = tokio::join!(run, publish);
        let last = match end {
            RunEnd::Exited(code) => BashOutput::new(command.id, order, Some(code), stdout, stderr),
            RunEnd::TimedOut => {
                tracing::warn!(command_id = %command.id, timeout = command.timeout, "command timed out");
                BashOutput::new(command.id, order, Some(-1), stdout, stderr)
            }
            RunEnd::SpawnFailed(detail) => BashOutput::new(
                command.id,
                0,
                Some(-1),
                None,
                Some(format!("Error executing command: {detail}")),
            ),
        };
        outputs.push(last.clone());
        self.save_and_publish(BashEvent::Output(last)).await;
        outputs
    }

    /// Starts `request` and waits for it: every output piece joined into one
    /// `BashOutput` (exit code -1 when unknown).
    pub async fn execute_blocking(
        self: &Arc<Self>,
        request: ExecuteBashRequest,
    ) -> Result<BashOutput, BashServiceError> {
        let started = self.start(request).await?;
        let id = started.command.id;
        let outputs = started
            .task
            .await
            .map_err(|e| BashServiceError::Task(e.to_string()))?;
        Ok(join_outputs(id, outputs))
    }

    /// Stops a command: `Some(true)` if it was running (it has ended when
    /// this returns), `Some(false)` if it already finished, `None` if unknown.
    pub async fn stop(&self, id: HexId) -> Result<Option<bool>, BashServiceError> {
        let running = {
            let map = self.running.lock();
            map.get(&id).map(|r| (r.stop.clone(), r.finished.clone()))
        };
        if let Some((stop, mut finished)) = running {
            stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(5), finished.wait_for(|d| *d)).await;
            return Ok(Some(true));
        }
        Ok(self.get(&id.hex()).await?.map(|_| false))
    }

    /// The event with this id (32 hex), if stored.
    pub async fn get(&self, event_id: &str) -> Result<Option<BashEvent>, BashServiceError> {
        let _permit = self
            .scans
            .acquire()
            .await
            .map_err(|_| BashServiceError::Closed)?;
        let store = self.store.clone();
        let id = event_id.to_string();
        tokio::task::spawn_blocking(move || store.get(&id))
            .await
            .map_err(|e| BashServiceError::Task(e.to_string()))?
            .map_err(BashServiceError::Io)
    }

    /// The events with these ids, `None` for each unknown one.
    pub async fn get_many(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<BashEvent>>, BashServiceError> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(self.get(id).await?);
        }
        Ok(out)
    }

    /// One page of stored events.
    pub async fn search(&self, filter: SearchFilter) -> Result<BashEventPage, BashServiceError> {
        let _permit = self
            .scans
            .acquire()
            .await
            .map_err(|_| BashServiceError::Closed)?;
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.search(&filter))
            .await
            .map_err(|e| BashServiceError::Task(e.to_string()))?
            .map_err(BashServiceError::Io)
    }

    /// Deletes every stored event; returns how many.
    pub async fn clear(&self) -> Result<usize, BashServiceError> {
        let _permit = self
            .scans
            .acquire()
            .await
            .map_err(|_| BashServiceError::Closed)?;
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.clear())
            .await
            .map_err(|e| BashServiceError::Task(e.to_string()))?
            .map_err(BashServiceError::Io)
    }

    /// Deletes events older than `age`; returns how many.
    pub async fn purge_older_than(&self, age: Duration) -> Result<usize, BashServiceError> {
        let cutoff = chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
        let cutoff = UtcTime(
            chrono::Utc::now()
                .checked_sub_signed(cutoff)
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC),
        );
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.delete_older_than(cutoff))
            .await
            .map_err(|e| BashServiceError::Task(e.to_string()))?
            .map_err(BashServiceError::Io)
    }

    /// A live feed of new events. Fails past [`MAX_SUBSCRIBERS`].
    pub fn subscribe(&self) -> Result<broadcast::Receiver<Arc<BashEvent>>, BashServiceError> {
        if self.events.receiver_count() >= MAX_SUBSCRIBERS {
            return Err(BashServiceError::TooManySubscribers);
        }
        Ok(self.events.subscribe())
    }

    /// Publishes an event to live subscribers without storing it.
    pub fn publish_transient(&self, event: BashEvent) {
        let _ = self.events.send(Arc::new(event));
    }

    /// Ids of commands still running.
    pub fn running_ids(&self) -> Vec<HexId> {
        self.running.lock().keys().copied().collect()
    }

    /// Refuses new commands, kills the running ones and waits for them.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(Duration::from_secs(10), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::error!("bash commands did not stop within 10 s");
        }
    }
}

/// Joins a finished command's outputs the way the reference's blocking
/// route does: ordered by `order`, text concatenated, exit code of the last
/// piece (-1 when unknown), empty text as `null`.
pub fn join_outputs(command_id: HexId, mut outputs: Vec<BashOutput>) -> BashOutput {
    if outputs.is_empty() {
        return BashOutput::new(command_id, 0, Some(-1), None, None);
    }
    outputs.sort_by_key(|o| o.order);
    let stdout: String = outputs.iter().filter_map(|o| o.stdout.as_deref()).collect();
    let stderr: String = outputs.iter().filter_map(|o| o.stderr.as_deref()).collect();
    let mut last = outputs
        .pop()
        .unwrap_or_else(|| BashOutput::new(command_id, 0, None, None, None));
    last.exit_code = Some(last.exit_code.unwrap_or(-1));
    last.stdout = (!stdout.is_empty()).then_some(stdout);
    last.stderr = (!stderr.is_empty()).then_some(stderr);
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(command: &str) -> ExecuteBashRequest {
        ExecuteBashRequest {
            command: command.into(),
            cwd: None,
            timeout: 30,
        }
    }

    #[tokio::test]
    async fn execute_stores_command_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let svc = Arc::new(BashEventService::new(
            dir.path().join("b"),
            Some(dir.path().to_path_buf()),
        ));
        let out = svc
            .execute_blocking(req("pwd; echo e >&2; exit 2"))
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(2));
        assert_eq!(out.stdout.as_deref().map(str::trim), dir.path().to_str());
        assert_eq!(out.stderr.as_deref(), Some("e\n"));
        let page = svc
            .search(SearchFilter {
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 2);
        assert!(svc.get(&out.id.hex()).await.unwrap().is_some());
        assert_eq!(svc.clear().await.unwrap(), 2);
    }

    #[tokio::test]
    async fn stop_running_finished_and_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let svc = Arc::new(BashEventService::new(dir.path(), None));
        let mut live = svc.subscribe().unwrap();
        let started = svc.start(req("sleep 30")).await.unwrap();
        let id = started.command.id;
        assert!(matches!(
            &*live.recv().await.unwrap(),
            BashEvent::Command(_)
        ));
        assert_eq!(svc.stop(id).await.unwrap(), Some(true));
        let outputs = started.task.await.unwrap();
        assert_eq!(outputs.last().unwrap().exit_code, Some(-15));
        assert_eq!(svc.stop(id).await.unwrap(), Some(false));
        assert_eq!(svc.stop(HexId::new()).await.unwrap(), None);
        assert!(svc.running_ids().is_empty());
    }

    #[tokio::test]
    async fn close_kills_running_commands() {
        let dir = tempfile::tempdir().unwrap();
        let svc = Arc::new(BashEventService::new(dir.path(), None));
        let started = svc.start(req("sleep 30")).await.unwrap();
        let t = std::time::Instant::now();
        svc.close().await;
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(started.task.await.is_ok());
        assert!(matches!(
            svc.start(req("true")).await,
            Err(BashServiceError::Closed)
        ));
    }

    #[test]
    fn join_keeps_order_and_last_exit_code() {
        let id = HexId::new();
        let a = BashOutput::new(id, 0, None, Some("a".into()), None);
        let b = BashOutput::new(id, 1, Some(0), Some("b".into()), Some("x".into()));
        let j = join_outputs(id, vec![b, a]);
        assert_eq!(j.stdout.as_deref(), Some("ab"));
        assert_eq!(j.stderr.as_deref(), Some("x"));
        assert_eq!(j.exit_code, Some(0));
        assert_eq!(join_outputs(id, vec![]).exit_code, Some(-1));
    }
}
