//! Serving HTTPS and WSS without a proxy, for the agent server and the
//! task-control plane alike: a PEM certificate chain and key (each named by
//! the setting that gave it, so errors name that setting) become a rustls
//! acceptor, and [`TlsListener`] hands axum connections whose TLS handshake
//! is done.
//!
//! Handshakes run concurrently in their own tasks, each bounded by
//! [`HANDSHAKE_TIMEOUT`], so a slow or silent client never holds up the
//! accept loop; a failed handshake is logged at debug level and dropped.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
pub use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;
use tokio_util::task::AbortOnDropHandle;

/// Longest TLS handshake a connection may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshaken connections waiting for axum to take them.
const READY_QUEUE: usize = 64;

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The certificate file is unreadable or holds no certificate.
    #[error("{setting} {path}: {detail}")]
    Certificate {
        /// The setting that named the file.
        setting: &'static str,
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// The key file is unreadable or holds no private key.
    #[error("{setting} {path}: {detail}")]
    Key {
        /// The setting that named the file.
        setting: &'static str,
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// The key does not fit the certificate, or rustls refuses them.
    #[error("TLS certificate and key cannot be used: {0}")]
    Config(String),
}

/// A PEM file and the name of the setting that gave it.
#[derive(Debug, Clone, Copy)]
pub struct PemFile<'a> {
    /// The setting (`tls_cert_file`, `OH_CONTROL_TLS_CERT_FILE`), named in errors.
    pub setting: &'static str,
    /// The file.
    pub path: &'a Path,
}

/// The acceptor for the PEM certificate chain in `cert` and the key in
/// `key` (HTTP/1.1 over ALPN, which WebSocket upgrades need).
pub fn acceptor(cert: PemFile<'_>, key: PemFile<'_>) -> Result<TlsAcceptor, TlsSetupError> {
    let cert_error = |detail: String| TlsSetupError::Certificate {
        setting: cert.setting,
        path: cert.path.display().to_string(),
        detail,
    };
    let chain = CertificateDer::pem_file_iter(cert.path)
        .map_err(|e| cert_error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(e.to_string()))?;
    if chain.is_empty() {
        return Err(cert_error("no PEM certificate in the file".into()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key.path).map_err(|e| TlsSetupError::Key {
        setting: key.setting,
        path: key.path.display().to_string(),
        detail: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener whose connections come out of a finished TLS handshake.
/// Create it on the runtime that should run the accept loop and the
/// handshakes (the front runtime for the binary).
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
    _accept: AbortOnDropHandle<()>,
}

impl TlsListener {
    /// Accepts on `tcp` and handshakes with `acceptor`.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let addr = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(READY_QUEUE);
        let task = tokio::spawn(accept_loop(tcp, acceptor, tx));
        Ok(Self {
            ready,
            addr,
            _accept: AbortOnDropHandle::new(task),
        })
    }
}

async fn accept_loop(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: wait, as axum does.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let acceptor = acceptor.clone();
        let handed = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = handed.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
        if ready.is_closed() {
            return;
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem<'a>(path: &'a Path, setting: &'static str) -> PemFile<'a> {
        PemFile { setting, path }
    }

    #[test]
    fn unusable_files_are_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "no pem here").unwrap();
        let missing = dir.path().join("missing.pem");
        let e = acceptor(pem(&missing, "cert_setting"), pem(&junk, "key_setting"))
            .err()
            .unwrap();
        assert!(matches!(e, TlsSetupError::Certificate { .. }), "{e}");
        assert!(e.to_string().contains("missing.pem"), "{e}");
        assert!(e.to_string().starts_with("cert_setting "), "{e}");
        let e = acceptor(pem(&junk, "cert_setting"), pem(&junk, "key_setting"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");

        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let cert_file = dir.path().join("cert.pem");
        std::fs::write(&cert_file, cert.pem()).unwrap();
        let e = acceptor(pem(&cert_file, "cert_setting"), pem(&junk, "key_setting"))
            .err()
            .unwrap();
        assert!(matches!(e, TlsSetupError::Key { .. }), "{e}");
        assert!(e.to_string().starts_with("key_setting "), "{e}");
        let key_file = dir.path().join("key.pem");
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        assert!(
            acceptor(
                pem(&cert_file, "cert_setting"),
                pem(&key_file, "key_setting")
            )
            .is_ok()
        );
        // A key of another certificate does not fit.
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(&key_file, other.serialize_pem()).unwrap();
        assert!(matches!(
            acceptor(
                pem(&cert_file, "cert_setting"),
                pem(&key_file, "key_setting")
            )
            .err()
            .unwrap(),
            TlsSetupError::Config(_)
        ));
    }
}
