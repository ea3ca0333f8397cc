//! Tasks and their retained output.
//!
//! Output is a sequence of chunks numbered by `seq` (1, 2, …) followed,
//! once the task ended, by its exit (the next `seq`). Any instance may
//! append: the `seq` is taken by an `UPDATE … RETURNING` on the task row
//! inside the transaction that inserts the chunk, so chunks commit in `seq`
//! order and a reader never skips one that commits later. At most
//! [`OUTPUT_RETENTION_BYTES`](crate::config::OUTPUT_RETENTION_BYTES) of
//! chunk data are kept; older chunks are dropped and `kept_from_seq` says
//! where the retained output starts.

use super::{Store, StoreResult, now_ms};
use sqlx::{Any, Row, Transaction};

/// Task statuses.
pub mod status {
    /// The conversation is being created.
    pub const STARTING: &str = "starting";
    /// The agent works.
    pub const RUNNING: &str = "running";
    /// Paused (resume continues it).
    pub const PAUSED: &str = "paused";
    /// Waiting for a confirmation of its actions.
    pub const WAITING: &str = "waiting_for_confirmation";
    /// Ended: the agent finished.
    pub const FINISHED: &str = "finished";
    /// Ended: the agent failed.
    pub const ERROR: &str = "error";
    /// Ended: the agent got stuck.
    pub const STUCK: &str = "stuck";
    /// Ended: cancelled by a request.
    pub const CANCELLED: &str = "cancelled";
    /// Ended: its sandbox or host failed.
    pub const FAILED: &str = "failed";
}

/// A task row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Task {
    /// Id (UUID).
    pub id: String,
    /// The sandbox.
    pub sandbox_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The user who started it (the owner).
    pub owner_user_id: String,
    /// The conversation on the sandbox's agent server.
    pub session_id: String,
    /// Id of its output stream.
    pub stream_id: String,
    /// See [`status`].
    pub status: String,
    /// 1 once ended.
    pub ended: i64,
    /// Exit code once ended.
    pub exit_code: Option<i64>,
    /// `seq` of the exit event once ended.
    pub exit_seq: Option<i64>,
    /// Last `seq` handed out.
    pub next_seq: i64,
    /// Bytes of retained chunk data.
    pub output_bytes: i64,
    /// First retained `seq`.
    pub kept_from_seq: i64,
    /// Instance forwarding its events.
    pub pump_instance: Option<String>,
    /// Last sign of life of that forwarder (Unix ms).
    pub pump_heartbeat: Option<i64>,
    /// Id of the last event forwarded.
    pub last_event_id: Option<String>,
    /// The forwarding lease's epoch (see [`Store::claim_pump`]).
    pub lease_epoch: i64,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last change (Unix ms).
    pub updated_at: i64,
    /// End time (Unix ms).
    pub ended_at: Option<i64>,
}

impl Task {
    /// Whether the task has ended.
    pub fn is_ended(&self) -> bool {
        self.ended != 0
    }
}

/// One retained output chunk.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Chunk {
    /// Sequence number.
    pub seq: i64,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// The text.
    pub data: String,
}

/// Why a task could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRefusal {
    /// The sandbox already runs a task.
    Busy,
    /// The sandbox is not ready.
    NotReady,
    /// The tenant runs as many tasks as it may.
    Limit,
}

/// Stream names.
pub const STDOUT: &str = "stdout";
/// Stream names.
pub const STDERR: &str = "stderr";

/// One line to append to a task's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// [`STDOUT`] or [`STDERR`].
    pub stream: &'a str,
    /// The text (one NDJSON line, newline included).
    pub text: String,
    /// The agent event this line forwards, recorded as the task's last
    /// forwarded event in the same transaction.
    pub event_id: Option<&'a str>,
}

impl<'a> Line<'a> {
    /// A control-plane line on stdout.
    pub fn stdout(text: String) -> Self {
        Line {
            stream: STDOUT,
            text,
            event_id: None,
        }
    }

    /// A diagnostic line on stderr.
    pub fn stderr(text: String) -> Self {
        Line {
            stream: STDERR,
            text,
            event_id: None,
        }
    }

    /// A forwarded agent event (`event_id` empty: an event without id).
    pub fn event(text: String, event_id: &'a str) -> Self {
        Line {
            stream: STDOUT,
            text,
            event_id: (!event_id.is_empty()).then_some(event_id),
        }
    }
}

/// Who appends to a task's output: its forwarder, holding the lease of
/// an epoch (refused once another claim moved the epoch on), or the
/// control plane itself (task controls, ending a task), never refused
/// while the task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// The forwarder holding the lease of this epoch.
    Lease(i64),
    /// The control plane's own lines.
    Control,
}

impl Writer {
    /// The epoch bound in the fenced statements (-1: not fenced).
    fn epoch(self) -> i64 {
        match self {
            Writer::Lease(e) => e,
            Writer::Control => -1,
        }
    }
}

async fn append_in(
    tx: &mut Transaction<'static, Any>,
    task_id: &str,
    stream: &str,
    data: &str,
    last_event_id: Option<&str>,
    retention: i64,
    writer: Writer,
) -> StoreResult<Option<i64>> {
    let size = i64::try_from(data.len()).unwrap_or(i64::MAX);
    let row = sqlx::query(
        "UPDATE tasks SET next_seq = next_seq + 1, output_bytes = output_bytes + $2, \
         updated_at = $3, last_event_id = COALESCE($4, last_event_id) \
         WHERE id = $1 AND ended = 0 AND ($5 < 0 OR lease_epoch = $5) \
         RETURNING next_seq, output_bytes",
    )
    .bind(task_id)
    .bind(size)
    .bind(now_ms())
    .bind(last_event_id)
    .bind(writer.epoch())
    .fetch_optional(&mut **tx)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let seq: i64 = row.try_get("next_seq")?;
    let bytes: i64 = row.try_get("output_bytes")?;
    sqlx::query(
        "INSERT INTO task_output (task_id, seq, stream, data, size) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(task_id)
    .bind(seq)
    .bind(stream)
    .bind(data)
    .bind(size)
    .execute(&mut **tx)
    .await?;
    if bytes > retention {
        trim_in(tx, task_id, bytes, retention).await?;
    }
    Ok(Some(seq))
}

/// Appends every line of `lines` in `tx`; false (the caller rolls back)
/// when the task has ended or `writer`'s lease was taken over.
async fn append_all_in(
    tx: &mut Transaction<'static, Any>,
    task_id: &str,
    lines: &[Line<'_>],
    retention: i64,
    writer: Writer,
) -> StoreResult<bool> {
    for line in lines {
        let appended = append_in(
            tx,
            task_id,
            line.stream,
            &line.text,
            line.event_id,
            retention,
            writer,
        )
        .await?;
        if appended.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Drops the oldest chunks until at most `retention` bytes are kept.
async fn trim_in(
    tx: &mut Transaction<'static, Any>,
    task_id: &str,
    bytes: i64,
    retention: i64,
) -> StoreResult<()> {
    let rows = sqlx::query("SELECT seq, size FROM task_output WHERE task_id = $1 ORDER BY seq")
        .bind(task_id)
        .fetch_all(&mut **tx)
        .await?;
    let mut left = bytes;
    let mut freed = 0i64;
    let mut cut = None;
    for row in rows {
        if left <= retention {
            break;
        }
        let seq: i64 = row.try_get("seq")?;
        let size: i64 = row.try_get("size")?;
        left -= size;
        freed += size;
        cut = Some(seq);
    }
    let Some(cut) = cut else { return Ok(()) };
    sqlx::query("DELETE FROM task_output WHERE task_id = $1 AND seq <= $2")
        .bind(task_id)
        .bind(cut)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "UPDATE tasks SET output_bytes = output_bytes - $2, kept_from_seq = $3 WHERE id = $1",
    )
    .bind(task_id)
    .bind(freed)
    .bind(cut + 1)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

impl Store {
    /// Starts a task on a ready, idle sandbox within the tenant's limit, in
    /// one transaction: the sandbox's current task becomes `task`.
    pub async fn start_task(&self, task: &Task) -> StoreResult<Result<(), StartRefusal>> {
        let mut tx = self.pool().begin().await?;
        let claimed = sqlx::query(
            "UPDATE sandboxes SET task_busy = 1, current_task_id = $2 \
             WHERE id = $1 AND task_busy = 0 AND status = 'ready'",
        )
        .bind(&task.sandbox_id)
        .bind(&task.id)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() != 1 {
            tx.rollback().await?;
            let status: Option<(String, i64)> =
                sqlx::query_as("SELECT status, task_busy FROM sandboxes WHERE id = $1")
                    .bind(&task.sandbox_id)
                    .fetch_optional(self.pool())
                    .await?;
            return Ok(Err(match status {
                Some((s, _)) if s != "ready" => StartRefusal::NotReady,
                Some(_) => StartRefusal::Busy,
                None => StartRefusal::NotReady,
            }));
        }
        let slot = sqlx::query(
            "UPDATE tenants SET running_tasks = running_tasks + 1 \
             WHERE id = $1 AND running_tasks < max_running_tasks",
        )
        .bind(&task.tenant_id)
        .execute(&mut *tx)
        .await?;
        if slot.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(Err(StartRefusal::Limit));
        }
        sqlx::query(
            "INSERT INTO tasks (id, sandbox_id, tenant_id, owner_user_id, session_id, stream_id, \
             status, ended, exit_code, exit_seq, next_seq, output_bytes, kept_from_seq, \
             pump_instance, pump_heartbeat, last_event_id, created_at, updated_at, ended_at, \
             lease_epoch) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0, NULL, NULL, 0, 0, 1, $8, $9, NULL, $10, $10, NULL, \
             $11)",
        )
        .bind(&task.id)
        .bind(&task.sandbox_id)
        .bind(&task.tenant_id)
        .bind(&task.owner_user_id)
        .bind(&task.session_id)
        .bind(&task.stream_id)
        .bind(&task.status)
        .bind(&task.pump_instance)
        .bind(task.pump_heartbeat)
        .bind(task.created_at)
        .bind(task.lease_epoch)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// The task with id `id`.
    pub async fn task(&self, id: &str) -> StoreResult<Option<Task>> {
        Ok(sqlx::query_as("SELECT * FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// A transaction that has appended `lines` for `writer`; `None` (and
    /// nothing written) when the task has ended or `writer`'s lease was
    /// taken over.
    async fn begin_with(
        &self,
        task_id: &str,
        lines: &[Line<'_>],
        retention: i64,
        writer: Writer,
    ) -> StoreResult<Option<Transaction<'static, Any>>> {
        let mut tx = self.pool().begin().await?;
        if !append_all_in(&mut tx, task_id, lines, retention, writer).await? {
            tx.rollback().await?;
            return Ok(None);
        }
        Ok(Some(tx))
    }

    /// Appends `lines` for `writer` in one transaction: all of them, or
    /// none (false) when the task has ended or `writer`'s lease was taken
    /// over.
    pub async fn append_lines(
        &self,
        task_id: &str,
        lines: &[Line<'_>],
        retention: i64,
        writer: Writer,
    ) -> StoreResult<bool> {
        let Some(tx) = self.begin_with(task_id, lines, retention, writer).await? else {
            return Ok(false);
        };
        tx.commit().await?;
        Ok(true)
    }

    /// Appends one chunk for `writer`; its `seq`, or `None` when the task
    /// has ended or `writer`'s lease was taken over.
    pub async fn append_output(
        &self,
        task_id: &str,
        stream: &str,
        data: &str,
        last_event_id: Option<&str>,
        retention: i64,
        writer: Writer,
    ) -> StoreResult<Option<i64>> {
        let mut tx = self.pool().begin().await?;
        let seq = append_in(
            &mut tx,
            task_id,
            stream,
            data,
            last_event_id,
            retention,
            writer,
        )
        .await?;
        if seq.is_some() {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        Ok(seq)
    }

    /// Sets a running task's status, appending `lines` in the same
    /// transaction (the event announcing the change and the `task_status`
    /// line, so a forwarder that dies between them cannot record one
    /// without the other); false when the task has ended or `writer`'s
    /// lease was taken over (nothing changes then).
    pub async fn set_task_status(
        &self,
        task_id: &str,
        status: &str,
        lines: &[Line<'_>],
        retention: i64,
        writer: Writer,
    ) -> StoreResult<bool> {
        let Some(mut tx) = self.begin_with(task_id, lines, retention, writer).await? else {
            return Ok(false);
        };
        sqlx::query("UPDATE tasks SET status = $2 WHERE id = $1")
            .bind(task_id)
            .bind(status)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ends a task: appends `lines`, then the exit with `exit_code`, sets
    /// `status`, frees the tenant's slot and the sandbox, all in one
    /// transaction. False when it had already ended or `writer`'s lease
    /// was taken over (nothing changes then).
    pub async fn end_task(
        &self,
        task_id: &str,
        status: &str,
        exit_code: i64,
        lines: &[Line<'_>],
        retention: i64,
        writer: Writer,
    ) -> StoreResult<bool> {
        let Some(mut tx) = self.begin_with(task_id, lines, retention, writer).await? else {
            return Ok(false);
        };
        let now = now_ms();
        let row = sqlx::query(
            "UPDATE tasks SET ended = 1, status = $2, exit_code = $3, next_seq = next_seq + 1, \
             exit_seq = next_seq + 1, ended_at = $4, updated_at = $4 \
             WHERE id = $1 AND ended = 0 AND ($5 < 0 OR lease_epoch = $5) \
             RETURNING tenant_id, sandbox_id",
        )
        .bind(task_id)
        .bind(status)
        .bind(exit_code)
        .bind(now)
        .bind(writer.epoch())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(false);
        };
        let tenant_id: String = row.try_get("tenant_id")?;
        let sandbox_id: String = row.try_get("sandbox_id")?;
        sqlx::query(
            "UPDATE tenants SET running_tasks = running_tasks - 1 WHERE id = $1 AND running_tasks > 0",
        )
        .bind(&tenant_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE sandboxes SET task_busy = 0 WHERE id = $1 AND current_task_id = $2")
            .bind(&sandbox_id)
            .bind(task_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Retained chunks with `seq > after`, oldest first, at most `limit`.
    pub async fn output_after(
        &self,
        task_id: &str,
        after: i64,
        limit: i64,
    ) -> StoreResult<Vec<Chunk>> {
        Ok(sqlx::query_as(
            "SELECT seq, stream, data FROM task_output WHERE task_id = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(task_id)
        .bind(after)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// Takes over forwarding a task's events for `instance` when nobody
    /// forwards them, this instance does, or the forwarder's heartbeat is
    /// older than `stale_before`. The new lease epoch when this instance
    /// now forwards: every claim moves the epoch on, so appends of an
    /// earlier forwarder (a stalled one, or one of this instance before
    /// its restart) are refused from now on.
    pub async fn claim_pump(
        &self,
        task_id: &str,
        instance: &str,
        stale_before: i64,
    ) -> StoreResult<Option<i64>> {
        let row = sqlx::query(
            "UPDATE tasks SET pump_instance = $2, pump_heartbeat = $3, \
             lease_epoch = lease_epoch + 1 WHERE id = $1 AND ended = 0 \
             AND (pump_instance IS NULL OR pump_instance = $2 OR pump_heartbeat IS NULL \
             OR pump_heartbeat < $4) RETURNING lease_epoch",
        )
        .bind(task_id)
        .bind(instance)
        .bind(now_ms())
        .bind(stale_before)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| r.try_get::<i64, _>("lease_epoch"))
            .transpose()
            .map_err(Into::into)
    }

    /// Refreshes the heartbeat of every running task `instance` forwards.
    pub async fn pump_heartbeat(&self, instance: &str) -> StoreResult<()> {
        sqlx::query("UPDATE tasks SET pump_heartbeat = $2 WHERE pump_instance = $1 AND ended = 0")
            .bind(instance)
            .bind(now_ms())
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Running tasks nobody has forwarded since `stale_before`.
    pub async fn orphaned_tasks(&self, stale_before: i64) -> StoreResult<Vec<Task>> {
        Ok(sqlx::query_as(
            "SELECT * FROM tasks WHERE ended = 0 AND (pump_heartbeat IS NULL OR pump_heartbeat < $1)",
        )
        .bind(stale_before)
        .fetch_all(self.pool())
        .await?)
    }

    /// Running tasks whose events `instance` forwards (or forwarded).
    pub async fn tasks_forwarded_by(&self, instance: &str) -> StoreResult<Vec<Task>> {
        Ok(
            sqlx::query_as("SELECT * FROM tasks WHERE pump_instance = $1 AND ended = 0")
                .bind(instance)
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Running tasks of a sandbox.
    pub async fn running_tasks_of(&self, sandbox_id: &str) -> StoreResult<Vec<Task>> {
        Ok(
            sqlx::query_as("SELECT * FROM tasks WHERE sandbox_id = $1 AND ended = 0")
                .bind(sandbox_id)
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Every task of a sandbox (for cleaning up its conversations).
    pub async fn tasks_of(&self, sandbox_id: &str) -> StoreResult<Vec<Task>> {
        Ok(
            sqlx::query_as("SELECT * FROM tasks WHERE sandbox_id = $1 ORDER BY created_at")
                .bind(sandbox_id)
                .fetch_all(self.pool())
                .await?,
        )
    }
}
