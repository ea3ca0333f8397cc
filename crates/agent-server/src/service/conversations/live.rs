//! A conversation loaded in memory: the SDK conversation, its event hub,
//! its metadata and the state of its background run.

use super::error::{RUN_LIMIT, ServiceError, blocking};
use super::hub::EventHub;
use super::info;
use super::stored::StoredConversation;
use crate::service::webhooks::WebhookDispatcher;
use chrono::Utc;
use futures::FutureExt;
use openhands_protocol::conversation_info::ConversationInfo;
use openhands_sdk::LocalConversation;
use openhands_sdk::conversation::EventCallback;
use openhands_wire::event::{Event, EventBody, SourceType};
use openhands_wire::message::Message;
use openhands_wire::state::ExecutionStatus;
use parking_lot::Mutex;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How long `interrupt` waits for the run to stop before answering.
const INTERRUPT_WAIT: Duration = Duration::from_secs(5);
/// How long `pause` and `interrupt` wait for their snapshot to reach every
/// subscriber's connection (a socket that stopped reading holds them no longer).
const SNAPSHOT_HANDOVER_WAIT: Duration = Duration::from_secs(2);
/// How long closing waits for a run to stop.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// Longest title generated automatically.
const TITLE_MAX_CHARS: usize = 50;

/// Service-wide resources a live conversation uses.
pub(crate) struct Ctx {
    /// Root of the conversation directories.
    pub root: PathBuf,
    /// Run slots (`max_concurrent_runs`).
    pub runs: Arc<Semaphore>,
    /// Webhook delivery, when configured.
    pub webhooks: Option<WebhookDispatcher>,
    /// Saved LLM profiles (for `title_llm_profile`).
    pub profiles: Option<crate::service::profiles::ProfileService>,
}

/// Parts shared with the SDK event callback (which exists before the
/// conversation does).
pub(crate) struct Shared {
    pub id: Uuid,
    pub hub: EventHub,
    pub meta: Arc<Mutex<StoredConversation>>,
    last_active: Mutex<Instant>,
    live: OnceLock<Weak<Live>>,
    title_started: AtomicBool,
    /// Cancelled when the conversation is deleted or evicted; sockets close.
    pub closed: CancellationToken,
    /// The run slot of the run in progress, freed as soon as the run's
    /// status leaves `running` (see [`Shared::callback`]).
    run_slot: Mutex<Option<OwnedSemaphorePermit>>,
    /// A run was started and has not announced a status yet (its
    /// `running` status is still being written).
    starting: AtomicBool,
    ctx: Arc<Ctx>,
}

impl Shared {
    pub fn new(id: Uuid, meta: Arc<Mutex<StoredConversation>>, ctx: Arc<Ctx>) -> Arc<Self> {
        Arc::new(Self {
            id,
            hub: EventHub::new(0),
            meta,
            last_active: Mutex::new(Instant::now()),
            live: OnceLock::new(),
            title_started: AtomicBool::new(false),
            closed: CancellationToken::new(),
            run_slot: Mutex::new(None),
            starting: AtomicBool::new(false),
            ctx,
        })
    }

    /// Records activity (defers idle eviction).
    pub fn touch(&self) {
        *self.last_active.lock() = Instant::now();
    }

    /// Time since the last activity.
    pub fn idle_for(&self) -> Duration {
        self.last_active.lock().elapsed()
    }

    /// The SDK callback: publishes every event to subscribers and
    /// webhooks, keeps `updated_at` current and starts the title generation
    /// after the first user message. Never blocks.
    pub fn callback(self: &Arc<Self>) -> EventCallback {
        let shared = self.clone();
        let handle = tokio::runtime::Handle::try_current().ok();
        Arc::new(move |event: &Event| {
            shared.touch();
            let is_state_update = matches!(event.body, EventBody::StateUpdate(_));
            if !is_state_update {
                shared.meta.lock().updated_at = Utc::now();
            }
            if let EventBody::StateUpdate(u) = &event.body
                && u.key == "execution_status"
            {
                shared.starting.store(false, Ordering::SeqCst);
                if u.value.as_str() != Some("running") {
                    // The run slot is free before anyone can see the run end,
                    // so a client that starts its next conversation on this
                    // event is not refused while the run winds down.
                    drop(shared.run_slot.lock().take());
                }
            }
            let frame = shared.hub.publish(event);
            if let (Some(w), Some(f)) = (&shared.ctx.webhooks, &frame)
                && !matches!(event.body, EventBody::StreamingDelta(_))
            {
                w.event(shared.id, f.json.clone());
            }
            if let EventBody::Message(_) = &event.body
                && event.source == SourceType::User
            {
                shared.maybe_start_title(handle.as_ref());
            }
        })
    }

    fn maybe_start_title(self: &Arc<Self>, handle: Option<&tokio::runtime::Handle>) {
        let (prompt, profile) = {
            let meta = self.meta.lock();
            if !meta.autotitle || meta.title.is_some() {
                return;
            }
            let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
            (text(&meta.prompt), text(&meta.title_llm_profile))
        };
        if self.title_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(handle) = handle else { return };
        let shared = self.clone();
        handle.spawn(async move {
            let Some(live) = shared.live.get().and_then(Weak::upgrade) else {
                return;
            };
            let llm = match &profile {
                Some(name) => shared.title_llm(name).await,
                None => None,
            };
            let title = match live
                .conv
                .generate_title_with(TITLE_MAX_CHARS, prompt.as_deref(), llm)
                .await
            {
                Ok(t) if !t.trim().is_empty() => t,
                Ok(_) => return,
                Err(e) => {
                    tracing::debug!(conversation = %shared.id, error = %e, "no title generated");
                    return;
                }
            };
            let changed = {
                let mut meta = shared.meta.lock();
                if meta.title.is_none() {
                    meta.title = Some(title);
                    meta.updated_at = Utc::now();
                    true
                } else {
                    false
                }
            };
            if changed && let Err(e) = live.save_meta().await {
                tracing::warn!(conversation = %shared.id, error = %e, "saving the title failed");
            }
        });
    }
}

impl Shared {
    /// The LLM of the title profile `name`; `None` (the agent's LLM is
    /// used, as in the reference) when it cannot be loaded.
    async fn title_llm(&self, name: &str) -> Option<openhands_llm::Llm> {
        let profiles = self.ctx.profiles.as_ref()?;
        let loaded = match profiles.load(name, true).await {
            Ok(p) => openhands_llm::Llm::new(p.config).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match loaded {
            Ok(llm) => Some(llm),
            Err(e) => {
                tracing::warn!(conversation = %self.id, profile = %name, error = %e,
                    "title LLM profile unusable; using the agent's LLM");
                None
            }
        }
    }
}

#[derive(Default)]
struct RunState {
    /// A background run task exists.
    active: bool,
    /// Start another run when the current one ends (input arrived while
    /// it was finishing).
    rerun: bool,
    /// The rerun was asked for explicitly (`/run` while a paused run winds
    /// down), so it happens whatever status the ending run leaves.
    rerun_paused: bool,
}

/// The goal loop task of a conversation.
pub(crate) struct GoalLoop {
    /// Stops the loop, which then records the goal as interrupted.
    pub stop: CancellationToken,
    /// The loop's task (aborted when the conversation closes, so that
    /// nothing is recorded then).
    pub task: tokio::task::JoinHandle<()>,
}

/// Where a run's slot (`max_concurrent_runs`) comes from.
pub(super) enum RunPermit {
    /// Take a free one now, or refuse the run.
    Take,
    /// One the caller already took.
    Given(OwnedSemaphorePermit),
    /// The caller holds one for a series of runs (a goal loop).
    Covered,
}

/// What asks for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// `POST …/run` (or an accepted confirmation).
    Run,
    /// A message sent with `run: true`.
    Message,
}

/// A conversation in memory.
pub struct Live {
    pub(crate) shared: Arc<Shared>,
    /// The SDK conversation.
    pub conv: LocalConversation,
    run: Mutex<RunState>,
    running: watch::Sender<bool>,
    /// The goal loop driving this conversation, if one is (see
    /// [`super::goal`]).
    pub(super) goal: tokio::sync::Mutex<Option<GoalLoop>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Wraps a freshly created or resumed SDK conversation.
    pub(crate) fn new(shared: Arc<Shared>, conv: LocalConversation) -> Arc<Self> {
        shared.hub.set_next_seq(conv.event_count() as u64);
        let (running, _) = watch::channel(false);
        let live = Arc::new(Self {
            shared,
            conv,
            run: Mutex::new(RunState::default()),
            running,
            goal: tokio::sync::Mutex::new(None),
        });
        let _ = live.shared.live.set(Arc::downgrade(&live));
        live
    }

    /// The conversation id.
    pub fn id(&self) -> Uuid {
        self.shared.id
    }

    /// The event hub.
    pub fn hub(&self) -> &EventHub {
        &self.shared.hub
    }

    /// Cancelled when the conversation leaves memory (deleted or evicted).
    pub fn closed(&self) -> CancellationToken {
        self.shared.closed.clone()
    }

    /// A copy of the metadata.
    pub fn meta(&self) -> StoredConversation {
        self.shared.meta.lock().clone()
    }

    /// Records activity.
    pub fn touch(&self) {
        self.shared.touch();
    }

    /// Whether a background run is in progress.
    pub fn is_running(&self) -> bool {
        self.run.lock().active
    }

    fn dir(&self) -> PathBuf {
        self.shared
            .ctx
            .root
            .join(self.shared.id.simple().to_string())
    }

    /// Writes `meta.json`.
    pub async fn save_meta(&self) -> Result<(), ServiceError> {
        let meta = self.meta();
        let dir = self.dir();
        blocking(move || {
            meta.save(&dir)
                .map_err(|e| ServiceError::Internal(e.to_string()))
        })
        .await
    }

    /// The state JSON (secrets protected as on disk, live statistics).
    pub fn state_json(&self) -> Value {
        self.conv.state_json()
    }

    /// Publishes a transient `full_state` snapshot to subscribers.
    pub fn publish_full_state(&self) {
        let event = self.full_state_to_webhooks();
        self.shared.hub.publish(&event);
    }

    /// Publishes a `full_state` snapshot and waits, at most
    /// [`SNAPSHOT_HANDOVER_WAIT`], until every subscriber has it on its
    /// connection: a request answered after this has its snapshot ahead
    /// of the answer, so a client re-arming a run cannot read it late.
    async fn publish_full_state_handed_over(&self) {
        let event = self.full_state_to_webhooks();
        self.shared
            .hub
            .publish_handed_over(&event, SNAPSHOT_HANDOVER_WAIT)
            .await;
    }

    /// A `full_state` snapshot, already handed to the webhooks (which
    /// never wait for the sockets).
    fn full_state_to_webhooks(&self) -> Event {
        let event = info::full_state_event(self.state_json());
        if let Some(w) = &self.shared.ctx.webhooks
            && let Ok(json) = serde_json::to_string(&event)
        {
            w.event(self.shared.id, Arc::from(json));
        }
        event
    }

    /// The `full_state` event for a new subscriber.
    pub fn full_state_event(&self) -> Event {
        info::full_state_event(self.state_json())
    }

    /// Starts a background run. `permit` is a run slot already taken (by a
    /// create with an initial message); otherwise one is taken here.
    ///
    /// While a paused or interrupted run is still winding down (its
    /// in-flight step completing), a run request is accepted and starts as
    /// soon as that run has ended; while the conversation is running it is
    /// a conflict.
    pub fn start_run(
        self: &Arc<Self>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Result<(), ServiceError> {
        let permit = match permit {
            Some(p) => RunPermit::Given(p),
            None => RunPermit::Take,
        };
        self.start_run_inner(permit, Trigger::Run)
    }

    pub(super) fn start_run_inner(
        self: &Arc<Self>,
        permit: RunPermit,
        trigger: Trigger,
    ) -> Result<(), ServiceError> {
        let permit = {
            let mut st = self.run.lock();
            let status = self.conv.status();
            // A run that has not announced `running` yet is running too.
            let starting = self.shared.starting.load(Ordering::SeqCst);
            if st.active {
                match trigger {
                    Trigger::Run if status != ExecutionStatus::Running && !starting => {
                        st.rerun = true;
                        st.rerun_paused = true;
                        return Ok(());
                    }
                    Trigger::Message => st.rerun = true,
                    Trigger::Run => {}
                }
                return Err(ServiceError::AlreadyRunning);
            }
            if status == ExecutionStatus::Running {
                return Err(ServiceError::AlreadyRunning);
            }
            let permit = match permit {
                RunPermit::Given(p) => Some(p),
                RunPermit::Covered => None,
                RunPermit::Take => Some(self.take_run_slot()?),
            };
            st.active = true;
            st.rerun = false;
            st.rerun_paused = false;
            self.shared.starting.store(true, Ordering::SeqCst);
            self.running.send_replace(true);
            permit
        };
        self.touch();
        let this = self.clone();
        // The run belongs to the span of whatever started it (a request's
        // server span carrying the client's trace context, when exported).
        tokio::spawn(tracing::Instrument::in_current_span(async move {
            this.run_loop(permit).await
        }));
        Ok(())
    }

    /// A free run slot, or the 429 refusal.
    pub(super) fn take_run_slot(&self) -> Result<OwnedSemaphorePermit, ServiceError> {
        self.shared
            .ctx
            .runs
            .clone()
            .try_acquire_owned()
            .map_err(|_| ServiceError::RunLimit(RUN_LIMIT.into()))
    }

    async fn run_loop(self: Arc<Self>, permit: Option<OwnedSemaphorePermit>) {
        *self.shared.run_slot.lock() = permit;
        loop {
            // A panic inside the agent loop must not leave the conversation
            // marked as running forever.
            match AssertUnwindSafe(self.conv.run()).catch_unwind().await {
                Ok(Ok(status)) => {
                    tracing::debug!(conversation = %self.shared.id, status = status.as_str(), "run ended");
                }
                Ok(Err(e)) => {
                    tracing::error!(conversation = %self.shared.id, error = %e, "run could not start");
                }
                Err(_) => {
                    tracing::error!(conversation = %self.shared.id, "the agent loop panicked; run ended");
                }
            }
            // The closing snapshot goes out under the run lock, so no new run
            // can start (and publish) before it; none is sent between chained
            // runs, because clients take a settled snapshot as the end.
            let again = {
                let mut st = self.run.lock();
                let status = self.conv.status();
                // A message re-arms only an idle conversation; an explicit
                // run request resumes whatever state the run ended in.
                let resumable = status == ExecutionStatus::Idle || st.rerun_paused;
                let again = st.rerun && resumable && !self.conv.is_closed();
                st.rerun = false;
                st.rerun_paused = false;
                if !again {
                    st.active = false;
                    self.running.send_replace(false);
                    self.publish_full_state();
                }
                again
            };
            if !again {
                break;
            }
            // The slot was freed when the previous run stopped: take one
            // again (waiting for it: the input that asks for this run was
            // accepted already).
            if self.shared.run_slot.lock().is_none()
                && let Ok(p) = self.shared.ctx.runs.clone().acquire_owned().await
            {
                *self.shared.run_slot.lock() = Some(p);
            }
        }
        drop(self.shared.run_slot.lock().take());
        self.shared.starting.store(false, Ordering::SeqCst);
        self.touch();
        if let Err(e) = self.save_meta().await {
            tracing::warn!(conversation = %self.shared.id, error = %e, "saving meta.json failed");
        }
    }

    fn cancel_rerun(&self) {
        let mut st = self.run.lock();
        st.rerun = false;
        st.rerun_paused = false;
    }

    /// Waits until no run is in progress, at most `limit`. True when idle.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        self.wait_idle_for(Some(limit)).await
    }

    /// Waits until no run is in progress, at most `limit` when given.
    pub(super) async fn wait_idle_for(&self, limit: Option<Duration>) -> bool {
        let mut rx = self.running.subscribe();
        match limit {
            Some(limit) => tokio::time::timeout(limit, rx.wait_for(|r| !*r))
                .await
                .is_ok(),
            None => rx.wait_for(|r| !*r).await.is_ok(),
        }
    }

    /// Sends a message; with `run`, starts a run or, when one is active,
    /// makes sure the message is picked up.
    ///
    /// A message from outside the goal loop stops that loop first (it can
    /// be resumed), so the user takes over without losing the goal.
    pub async fn send_message(
        self: &Arc<Self>,
        message: Message,
        run: bool,
    ) -> Result<(), ServiceError> {
        self.stop_goal().await;
        self.touch();
        let conv = self.conv.clone();
        blocking(move || conv.send(message).map(|_| ()).map_err(ServiceError::from)).await?;
        if !run {
            return Ok(());
        }
        match self.start_run_inner(RunPermit::Take, Trigger::Message) {
            Ok(()) | Err(ServiceError::AlreadyRunning) => Ok(()),
            Err(ServiceError::RunLimit(_)) => Err(ServiceError::RunLimit(format!(
                "Message saved, but the conversation run limit was reached. Retry POST \
                 /api/conversations/{}/run without resending the message.",
                self.shared.id
            ))),
            Err(e) => Err(e),
        }
    }

    /// Moves the HEAD to `event_id` (`None`: the empty tree); the next run
    /// works on that branch. An unknown event is [`ServiceError::Missing`].
    pub async fn navigate(&self, event_id: Option<String>) -> Result<(), ServiceError> {
        self.touch();
        let conv = self.conv.clone();
        blocking(move || {
            conv.navigate_to(event_id.as_deref()).map_err(|e| match e {
                openhands_sdk::ConversationError::Invalid(m) => ServiceError::Missing(m),
                other => other.into(),
            })
        })
        .await
    }

    /// Accepts (runs) or rejects the pending actions.
    pub async fn respond_to_confirmation(
        self: &Arc<Self>,
        accept: bool,
        reason: String,
    ) -> Result<(), ServiceError> {
        self.touch();
        if accept {
            return match self.start_run(None) {
                Ok(()) | Err(ServiceError::AlreadyRunning) => Ok(()),
                Err(e) => Err(e),
            };
        }
        let conv = self.conv.clone();
        blocking(move || {
            conv.respond_to_confirmation(false, Some(reason))
                .map_err(ServiceError::from)
        })
        .await
    }

    /// Pauses: a `PauseEvent` and status `paused` now; the run stops after
    /// its current step. Answers once the state snapshot is on the
    /// subscribers' connections.
    pub async fn pause(&self) -> Result<(), ServiceError> {
        self.touch();
        self.cancel_rerun();
        let conv = self.conv.clone();
        blocking(move || conv.pause().map_err(ServiceError::from)).await?;
        self.publish_full_state_handed_over().await;
        Ok(())
    }

    /// Interrupts: cancels the in-flight LLM call and tools, waits briefly
    /// for the run to stop and publishes a state snapshot.
    pub async fn interrupt(&self) -> Result<(), ServiceError> {
        self.touch();
        self.cancel_rerun();
        let conv = self.conv.clone();
        blocking(move || conv.interrupt().map_err(ServiceError::from)).await?;
        self.wait_idle(INTERRUPT_WAIT).await;
        self.publish_full_state_handed_over().await;
        Ok(())
    }

    /// Stops any run, closes the tools and disconnects subscribers.
    pub async fn close(&self) {
        self.end_goal_quietly().await;
        self.cancel_rerun();
        self.conv.close().await;
        if !self.wait_idle(CLOSE_WAIT).await {
            tracing::warn!(conversation = %self.shared.id, "run did not stop within {CLOSE_WAIT:?}");
        }
        self.shared.closed.cancel();
    }

    /// Notifies conversation webhooks with the current info.
    pub fn notify_webhooks(&self, info: &ConversationInfo) {
        if let Some(w) = &self.shared.ctx.webhooks {
            match serde_json::to_value(info) {
                Ok(v) => w.conversation(v),
                Err(e) => tracing::warn!(error = %e, "conversation info not sent to webhooks"),
            }
        }
    }

    /// Whether the conversation is quiet: no run, no subscriber and no
    /// activity for `ttl`. (Idle eviction also checks that nothing else
    /// holds it.)
    pub(crate) fn is_quiet(&self, ttl: Duration) -> bool {
        !self.is_running()
            && self.shared.hub.subscriber_count() == 0
            && self.shared.idle_for() >= ttl
    }
}
