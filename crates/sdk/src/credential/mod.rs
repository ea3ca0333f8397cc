//! Versioned credential bindings: a credential (a Codex `auth.json`, ...)
//! whose canonical copy lives outside the conversation — in the product
//! that launched it, or in the agent server's secrets store — and that an
//! ACP server may rotate while it runs (a refreshed token). The
//! conversation loads it when the ACP server starts, writes it to a private
//! file for the server, and writes every change the server makes back with
//! a compare-and-swap on the version it loaded, so two runtimes sharing one
//! credential never overwrite each other's rotation silently.
//!
//! - [`VersionedCredentialBinding`]: the trait (`load`, `replace`); users
//!   implement it for their own stores;
//! - [`http::HttpVersionedCredentialBinding`]: the reference's HTTP binding
//!   (`GET` → `{"value","version"}`, `PUT {"expected_version","value"}` →
//!   `{"version"}`, its status codes mapped to [`CredentialError`]);
//! - [`file::FileCredential`]: the credential file an ACP server reads,
//!   synced back after each turn and fork and when the conversation closes.

pub mod file;
pub mod http;

use async_trait::async_trait;

/// The name of the one file credential the reference binds: the Codex CLI's
/// ChatGPT `auth.json`.
pub const CODEX_AUTH_SECRET_NAME: &str = "CODEX_AUTH_JSON";

/// Whether `secret_name` can be bound (the reference binds only Codex's
/// `auth.json`; the agent server answers 404 for any other name).
pub fn supports_file_credential_binding(secret_name: &str) -> bool {
    secret_name == CODEX_AUTH_SECRET_NAME
}

/// Whether `text` is a usable value of the bound credential `secret_name`.
pub fn is_valid_credential(secret_name: &str, text: &str) -> bool {
    match secret_name {
        CODEX_AUTH_SECRET_NAME => openhands_acp::auth::is_valid_codex_auth(text),
        _ => !text.is_empty(),
    }
}

/// A credential's value and the version it has at its source.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedCredential {
    /// The credential (file contents).
    pub value: String,
    /// Opaque version, non-empty; the next `replace` must name it.
    pub version: String,
}

impl std::fmt::Debug for ResolvedCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedCredential")
            .field("value", &"<redacted>")
            .field("version", &self.version)
            .finish()
    }
}

/// Why a credential could not be loaded or written back. The messages are
/// the reference's; none contains the credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Missing or invalid at the source: the user must sign in again
    /// (HTTP 404, 400, 422).
    #[error("{0}")]
    NeedsReauthentication(String),
    /// The source changed in another runtime (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// The source refused the binding's authorization (HTTP 401, 403).
    #[error("{0}")]
    AuthorizationRejected(String),
    /// The source's answer (or its URL) is not usable.
    #[error("{0}")]
    InvalidResponse(String),
    /// The source does not support bindings (HTTP 501).
    #[error("{0}")]
    Unsupported(String),
    /// The source could not be reached or failed (transient).
    #[error("{0}")]
    Unavailable(String),
}

impl CredentialError {
    /// Whether retrying cannot help until something changes (the user signs
    /// in again, the binding is re-authorized, the conflict is resolved).
    pub fn is_permanent(&self) -> bool {
        !matches!(self, Self::Unavailable(_))
    }

    /// Whether the reference counts it as a synchronization failure
    /// (`CredentialSyncError` and its kinds) rather than a sign-in problem.
    pub fn is_sync_error(&self) -> bool {
        matches!(
            self,
            Self::Conflict(_)
                | Self::AuthorizationRejected(_)
                | Self::InvalidResponse(_)
                | Self::Unavailable(_)
        )
    }
}

/// A credential with a canonical copy elsewhere, read and replaced by
/// version. Implementations must bound every call in time.
#[async_trait]
pub trait VersionedCredentialBinding: Send + Sync + std::fmt::Debug {
    /// The current value and its version.
    async fn load(&self) -> Result<ResolvedCredential, CredentialError>;

    /// Replaces the value if the source still has `expected_version`;
    /// returns the new version. [`CredentialError::Conflict`] when another
    /// runtime changed it first.
    async fn replace(&self, expected_version: &str, value: &str)
    -> Result<String, CredentialError>;

    /// A counter that grows each time the binding is given a new
    /// authorization (so a rejected authorization is retried); `None` for
    /// bindings without one.
    fn authorization_revision(&self) -> Option<u64> {
        None
    }
}

/// Why a binding could not be activated on a conversation.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// The conversation's ACP server has started (or the conversation is
    /// closed, or its agent is not an `ACPAgent`): the binding must come
    /// before the first use.
    #[error("Credential binding activation arrived after ACP initialization")]
    TooLate,
    /// The secret is not a bindable file credential.
    #[error("Credential binding is not supported for secret '{0}'")]
    Unsupported(String),
    /// The ACP server runs sandboxed, where the credential file (a private
    /// directory outside the workspace) can be neither read nor rotated.
    #[error(
        "Credential bindings are not supported for sandboxed conversations (conversation_runtime \"sandbox\")"
    )]
    Sandboxed,
    /// The conversation could not record the change.
    #[error("{0}")]
    Failed(String),
}
