//! The ACP slot: the client of an `ACPAgent` conversation's ACP server,
//! once started, and the lock that lets one start happen at a time (held
//! across the start, before the client lock; each released before any
//! other part is called); also the credential bindings activated before
//! the first start and the credential files written for the server (their
//! lock is taken on its own, never with another).

use crate::credential::VersionedCredentialBinding;
use crate::credential::file::FileCredential;
use openhands_acp::AcpClient;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The ACP part of a conversation: the server's client once started, and
/// one start at a time.
#[derive(Default)]
pub(crate) struct AcpSlot {
    client: parking_lot::Mutex<Option<AcpClient>>,
    start: tokio::sync::Mutex<()>,
    /// Whether a server has started once (bindings come before that).
    initialized: AtomicBool,
    bindings: parking_lot::Mutex<BTreeMap<String, Arc<dyn VersionedCredentialBinding>>>,
    files: tokio::sync::Mutex<Vec<FileCredential>>,
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

    /// Replaces the client; a client marks the slot initialized.
    pub(crate) fn set(&self, client: Option<AcpClient>) {
        if client.is_some() {
            self.initialized.store(true, Ordering::SeqCst);
        }
        *self.client.lock() = client;
    }

    /// Takes the client (to close it).
    pub(crate) fn take(&self) -> Option<AcpClient> {
        self.client.lock().take()
    }

    /// Whether a server has been started once.
    pub(crate) fn initialized(&self) -> bool {
        self.initialized.load(Ordering::SeqCst)
    }

    /// Records a binding for the next start.
    pub(crate) fn bind(&self, name: &str, binding: Arc<dyn VersionedCredentialBinding>) {
        self.bindings.lock().insert(name.to_string(), binding);
    }

    /// The activated bindings.
    pub(crate) fn bindings(&self) -> BTreeMap<String, Arc<dyn VersionedCredentialBinding>> {
        self.bindings.lock().clone()
    }

    /// The credential files written for the server.
    pub(crate) fn files(&self) -> &tokio::sync::Mutex<Vec<FileCredential>> {
        &self.files
    }
}
