//! The launcher behind the `start_child_conversation` tool: a conversation
//! of this server starts its child on the same server, exactly as
//! `POST /api/conversations/{id}/children` does.

use super::error::ServiceError;
use async_trait::async_trait;
use futures::future::BoxFuture;
use openhands_protocol::conversations::{
    Isolation, StartChildConversationRequest, StartChildConversationResponse,
};
use openhands_sdk::subagent::{ChildLauncher, LaunchError};
use std::sync::Arc;
use uuid::Uuid;

/// Starts a child of a parent: `(parent, task, title, worktree)` → the
/// child, `None` when the parent does not exist (the conversation service's
/// `start_child`, reached without keeping the service alive).
pub type StartChild = Arc<
    dyn Fn(
            Uuid,
            String,
            Option<String>,
            bool,
        )
            -> BoxFuture<'static, Result<Option<StartChildConversationResponse>, ServiceError>>
        + Send
        + Sync,
>;

/// Starts children through the conversation service.
pub struct ServiceChildLauncher {
    start: StartChild,
}

impl ServiceChildLauncher {
    /// A launcher starting children with `start`.
    pub fn new(start: StartChild) -> Self {
        Self { start }
    }
}

#[async_trait]
impl ChildLauncher for ServiceChildLauncher {
    async fn launch(
        &self,
        parent: Uuid,
        request: StartChildConversationRequest,
    ) -> Result<StartChildConversationResponse, LaunchError> {
        if let Err(e) = request.validate() {
            return Err(LaunchError::Invalid(e.to_string()));
        }
        let worktree = request.isolation == Isolation::Worktree;
        // The child is launched from a task of its own: the launch must not
        // be cancelled half-way when the parent's step is.
        let launch = (self.start)(parent, request.task, request.title, worktree);
        let launched = tokio::spawn(launch)
            .await
            .map_err(|e| LaunchError::Failed(e.to_string()))?;
        match launched {
            Ok(Some(child)) => Ok(child),
            Ok(None) => Err(LaunchError::Refused {
                status: 404,
                detail: "Parent conversation not found".into(),
            }),
            Err(e) => Err(LaunchError::Failed(e.to_string())),
        }
    }
}
