//! The launcher behind the `start_child_conversation` tool: a conversation
//! of this server starts its child on the same server, exactly as
//! `POST /api/conversations/{id}/children` does.

use super::service::WeakConversationService;
use async_trait::async_trait;
use openhands_protocol::conversations::{
    Isolation, StartChildConversationRequest, StartChildConversationResponse,
};
use openhands_sdk::subagent::ChildLauncher;
use uuid::Uuid;

/// Starts children through the conversation service (without keeping the
/// service alive).
pub struct ServiceChildLauncher {
    service: WeakConversationService,
}

impl ServiceChildLauncher {
    /// A launcher for `service`'s conversations.
    pub fn new(service: WeakConversationService) -> Self {
        Self { service }
    }
}

#[async_trait]
impl ChildLauncher for ServiceChildLauncher {
    async fn launch(
        &self,
        parent: Uuid,
        request: StartChildConversationRequest,
    ) -> Result<StartChildConversationResponse, String> {
        let Some(service) = self.service.upgrade() else {
            return Err("Child conversation launch failed: the server is shutting down".into());
        };
        if let Err(e) = request.validate() {
            return Err(format!("Invalid child conversation request: {e}"));
        }
        let worktree = request.isolation == Isolation::Worktree;
        // The child is launched from a task of its own: the parent's run
        // holds its conversation while this tool call is in flight, and the
        // launch must not be cancelled half-way with the parent's step.
        let launched = tokio::spawn(async move {
            service
                .start_child(parent, request.task, request.title, worktree)
                .await
        })
        .await
        .map_err(|e| format!("Child conversation launch failed: {e}"))?;
        match launched {
            Ok(Some(child)) => Ok(child),
            Ok(None) => {
                Err("Child conversation launch failed (404): Parent conversation not found".into())
            }
            Err(e) => Err(format!("Child conversation launch failed: {e}")),
        }
    }
}
