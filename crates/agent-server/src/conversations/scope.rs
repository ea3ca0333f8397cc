//! The conversation service as the resolver of conversation-scoped
//! bash/file/git routes (`/api/conversations/{id}/bash|file|git/...`):
//! they work inside the conversation's workspace and keep their history in
//! the conversation's directory.

use super::service::ConversationService;
use crate::state::{RuntimeScope, RuntimeScopeResolver};
use async_trait::async_trait;
use std::path::PathBuf;
use uuid::Uuid;

#[async_trait]
impl RuntimeScopeResolver for ConversationService {
    async fn resolve(&self, id: Uuid) -> Option<RuntimeScope> {
        let working_dir = self.workspace_of(id)?;
        Some(RuntimeScope {
            workspace_root: PathBuf::from(working_dir),
            conversation_dir: self.conversation_dir(id),
        })
    }
}
