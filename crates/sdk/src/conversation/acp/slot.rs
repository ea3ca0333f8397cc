//! The ACP slot: the client of an `ACPAgent` conversation's ACP server,
//! once started, and the lock that lets one start happen at a time (held
//! across the start, before the client lock; each released before any
//! other part is called).

use openhands_acp::AcpClient;

/// The ACP part of a conversation: the server's client once started, and
/// one start at a time.
#[derive(Default)]
pub(crate) struct AcpSlot {
    client: parking_lot::Mutex<Option<AcpClient>>,
    start: tokio::sync::Mutex<()>,
}

impl AcpSlot {
    /// Held while a server starts.
    pub(crate) async fn starting(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.start.lock().await
    }

    /// The client, if a server was started.
    pub(crate) fn client(&self) -> Option<AcpClient> {
        self.client.lock().clone()
    }

    /// Replaces the client.
    pub(crate) fn set(&self, client: Option<AcpClient>) {
        *self.client.lock() = client;
    }

    /// Takes the client (to close it).
    pub(crate) fn take(&self) -> Option<AcpClient> {
        self.client.lock().take()
    }
}
