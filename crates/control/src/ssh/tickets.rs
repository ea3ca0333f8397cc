//! Minting and using SSH relay tickets (see [`crate::ssh`]).

use crate::auth::Caller;
use crate::error::ApiError;
use crate::grants::{Effective, GrantSet, SANDBOXES_WRITE};
use crate::secrets::{hash_credential, new_credential};
use crate::service::ControlPlane;
use crate::store::sandboxes::{Sandbox, status};
use crate::store::tickets::Ticket;
use crate::store::{Store, StoreError, now_ms};
use axum::http::StatusCode;
use serde_json::{Value, json};

/// Prefix of SSH tickets.
pub const TICKET_PREFIX: &str = "ohs_";

/// 503 code when the relay is off.
pub const SSH_RELAY_UNAVAILABLE: &str = "ssh_relay_unavailable";

/// Why a ticket does not open a session (said to the log, never to the
/// client, which only learns that authentication failed).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Unknown, used or expired.
    #[error("unknown, used or expired ticket")]
    Unknown,
    /// The sandbox is gone, being deleted or not ready.
    #[error("the sandbox {0} is deleted or not ready")]
    Sandbox(String),
    /// The credential was revoked or expired, or the user lost the grant.
    #[error("the credential that asked for it was revoked or lost sandboxes:write")]
    Credential,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A used ticket: who opens which sandbox.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The ticket's record.
    pub ticket: Ticket,
    /// The sandbox.
    pub sandbox: Sandbox,
}

impl ControlPlane {
    /// Mints a ticket for the caller's sandbox `sandbox_id`: the answer
    /// (`201`) of `POST …/ssh/tickets`.
    pub async fn mint_ticket(&self, caller: &Caller, sandbox_id: &str) -> Result<Value, ApiError> {
        let s = self.find_sandbox(caller, sandbox_id).await?;
        let Some((host, port)) = self.ssh_public() else {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                SSH_RELAY_UNAVAILABLE,
                "the SSH relay is off on this control plane (OH_CONTROL_SSH_ADDR is not set)",
            ));
        };
        if s.status != status::READY {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                crate::error::codes::SANDBOX_NOT_READY,
                format!("the sandbox is {}; SSH needs a ready sandbox", s.status),
            ));
        }
        let secret = new_credential(TICKET_PREFIX).map_err(ApiError::internal)?;
        let now = now_ms();
        let ttl = i64::try_from(self.config().ssh.ticket_ttl.as_millis()).unwrap_or(i64::MAX);
        let ticket = Ticket {
            ticket_hash: hash_credential(&secret),
            tenant_id: s.tenant_id.clone(),
            sandbox_id: s.id.clone(),
            user_id: caller.user_id.clone(),
            credential_id: caller.credential_id.clone(),
            created_at: now,
            expires_at: now.saturating_add(ttl),
            used_at: None,
        };
        self.store().insert_ticket(&ticket).await?;
        tracing::info!(sandbox = %s.id, user = %caller.user_id, "SSH ticket issued");
        let expires = chrono::DateTime::from_timestamp_millis(ticket.expires_at)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        Ok(json!({
            "ticket": secret,
            "host": host,
            "port": port,
            "user": s.id,
            "expires_at": expires,
        }))
    }
}

/// Uses `secret` (once): the sandbox it opens, after checking again that
/// the sandbox is ready and that the credential that asked is usable and
/// still grants `sandboxes:write`.
pub async fn use_ticket(store: &Store, secret: &str) -> Result<Opened, Refused> {
    if !secret.starts_with(TICKET_PREFIX) {
        return Err(Refused::Unknown);
    }
    let ticket = store
        .use_ticket(&hash_credential(secret))
        .await?
        .ok_or(Refused::Unknown)?;
    let sandbox = still_allowed(store, &ticket, &[status::READY]).await?;
    Ok(Opened { ticket, sandbox })
}

/// Whether the session of a used `ticket` may go on: its sandbox is there
/// and not being deleted, and its credential is still usable and grants
/// `sandboxes:write`. Checked again and again while the session is open.
pub async fn may_continue(store: &Store, ticket: &Ticket) -> Result<(), Refused> {
    still_allowed(
        store,
        ticket,
        &[status::READY, status::PAUSED, status::STARTING],
    )
    .await
    .map(|_| ())
}

/// The sandbox of `ticket` when its status is one of `statuses` and the
/// credential that minted the ticket still allows opening it.
async fn still_allowed(
    store: &Store,
    ticket: &Ticket,
    statuses: &[&str],
) -> Result<Sandbox, Refused> {
    let sandbox = store
        .sandbox(&ticket.tenant_id, &ticket.sandbox_id)
        .await?
        .filter(|s| statuses.contains(&s.status.as_str()))
        .ok_or_else(|| Refused::Sandbox(ticket.sandbox_id.clone()))?;
    let cred = store
        .credential_by_id(&ticket.credential_id)
        .await?
        .filter(|c| c.is_usable(now_ms()) && c.tenant_id == ticket.tenant_id)
        .ok_or(Refused::Credential)?;
    let user = store
        .user(&ticket.user_id)
        .await?
        .filter(|u| u.tenant_id == ticket.tenant_id && u.id == cred.user_id)
        .ok_or(Refused::Credential)?;
    let grants = Effective {
        user: GrantSet::from_stored(&user.permissions),
        key: (cred.kind == "key").then(|| GrantSet::from_stored(&cred.grants)),
    };
    if !grants.allows(SANDBOXES_WRITE) {
        return Err(Refused::Credential);
    }
    Ok(sandbox)
}
