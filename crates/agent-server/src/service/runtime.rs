//! Conversation-scoped runtimes for the `/api/conversations/{id}/bash|file|git/...`
//! routes: they work inside the conversation's workspace and keep their
//! history in the conversation's directory. The conversation service
//! resolves them; [`RuntimeBash`] keeps one bash service per conversation.

use super::bash::BashEventService;
use super::conversations::ConversationService;
use async_trait::async_trait;
use openhands_workspace::confine::Confinement;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use uuid::Uuid;

/// Where a conversation's runtime lives, for the conversation-scoped routes
/// (`/api/conversations/{id}/bash|file|git/...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeScope {
    /// The conversation's workspace: paths must stay inside it and commands
    /// run there by default.
    pub workspace_root: PathBuf,
    /// The conversation's persistence directory (bash history goes to
    /// `<conversation_dir>/bash_events`).
    pub conversation_dir: PathBuf,
}

/// Looks up conversation runtimes; implemented by the conversation service.
#[async_trait]
pub trait RuntimeScopeResolver: Send + Sync {
    /// The runtime of conversation `id`, or `None` when unknown.
    async fn resolve(&self, id: Uuid) -> Option<RuntimeScope>;
}

#[async_trait]
impl RuntimeScopeResolver for ConversationService {
    async fn resolve(&self, id: Uuid) -> Option<RuntimeScope> {
        let working_dir = self.workspace_of(id).await?;
        Some(RuntimeScope {
            workspace_root: PathBuf::from(working_dir),
            conversation_dir: self.conversation_dir(id),
        })
    }
}

impl RuntimeScope {
    /// A confinement to the workspace (the blocking resolution runs off the
    /// async runtime).
    pub async fn confinement(&self) -> Confinement {
        let root = self.workspace_root.clone();
        match tokio::task::spawn_blocking(move || Confinement::new(&root)).await {
            Ok(c) => c,
            Err(_) => Confinement::new(&self.workspace_root),
        }
    }
}

/// The bash services of conversations (created on first use, history in
/// `<conversation_dir>/bash_events`, commands in the workspace).
#[derive(Default)]
pub struct RuntimeBash {
    services: Mutex<HashMap<Uuid, Arc<BashEventService>>>,
}

impl RuntimeBash {
    /// The bash service of conversation `id`.
    pub fn get(&self, id: Uuid, scope: &RuntimeScope) -> Arc<BashEventService> {
        self.services
            .lock()
            .entry(id)
            .or_insert_with(|| {
                Arc::new(BashEventService::new(
                    scope.conversation_dir.join("bash_events"),
                    Some(scope.workspace_root.clone()),
                ))
            })
            .clone()
    }

    /// Closes and forgets a conversation's bash service (when the
    /// conversation is deleted).
    pub async fn remove(&self, id: Uuid) {
        let service = self.services.lock().remove(&id);
        if let Some(s) = service {
            s.close().await;
        }
    }

    /// Closes every bash service (server shutdown).
    pub async fn close_all(&self) {
        let services: Vec<Arc<BashEventService>> =
            self.services.lock().drain().map(|(_, s)| s).collect();
        for s in services {
            s.close().await;
        }
    }
}
