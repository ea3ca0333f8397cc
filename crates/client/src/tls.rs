//! The TLS side of every client: one rustls configuration (ring provider)
//! trusting the system roots plus an optional CA bundle, shared by the HTTP
//! client and the WebSocket connector so `https://` and `wss://` verify
//! alike.
//!
//! System roots come from `rustls-native-certs`, which honours
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` as OpenSSL does (when either is set, only
//! those certificates are trusted). [`TlsOptions::ca_file`] adds the PEM
//! certificates of one more file on top (a private CA, a test CA),
//! [`TlsOptions::ca_pem`] those of PEM text in memory (a kubeconfig's
//! `certificate-authority-data`); [`TlsOptions::identity`] is a client
//! certificate the client presents (a kubeconfig's client certificate).

use crate::error::ClientError;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Which certificates a client trusts (and which one it presents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Trust the system roots (`SSL_CERT_FILE`/`SSL_CERT_DIR` when set).
    pub system_roots: bool,
    /// A PEM bundle of further trusted CA certificates.
    pub ca_file: Option<PathBuf>,
    /// PEM text of further trusted CA certificates.
    pub ca_pem: Option<Vec<u8>>,
    /// The client certificate presented to servers that ask for one.
    pub identity: Option<ClientIdentity>,
}

/// A client certificate chain and its private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain (leaf first).
    pub cert_pem: Vec<u8>,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity").finish_non_exhaustive()
    }
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            system_roots: true,
            ca_file: None,
            ca_pem: None,
            identity: None,
        }
    }
}

impl TlsOptions {
    /// The system roots plus the certificates in `ca_file`.
    pub fn with_ca_file(ca_file: impl Into<PathBuf>) -> Self {
        Self {
            ca_file: Some(ca_file.into()),
            ..Self::default()
        }
    }
}

/// The system roots, read once per process (reading them parses every
/// certificate of the system store).
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::warn!(error = %e, "some system root certificates could not be read");
        }
        found.certs
    })
}

/// The certificates of a PEM file.
fn read_bundle(path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let bad = |detail: String| ClientError::Tls(format!("CA bundle {}: {detail}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in the file".into()));
    }
    Ok(certs)
}

/// A rustls client configuration for `options` (no ALPN: HTTP/1.1, which
/// both the REST client and the WebSocket handshake speak).
pub fn client_config(options: &TlsOptions) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    static DEFAULT: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if *options == TlsOptions::default()
        && let Some(c) = DEFAULT.get()
    {
        return Ok(c.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    if options.system_roots {
        let (_, ignored) = roots.add_parsable_certificates(system_roots().iter().cloned());
        if ignored > 0 {
            tracing::debug!(ignored, "system root certificates rustls cannot use");
        }
    }
    if let Some(path) = &options.ca_file {
        for cert in read_bundle(path)? {
            roots
                .add(cert)
                .map_err(|e| ClientError::Tls(format!("CA bundle {}: {e}", path.display())))?;
        }
    }
    if let Some(pem) = &options.ca_pem {
        let bad = |detail: String| ClientError::Tls(format!("CA certificates: {detail}"));
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate in the data".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| bad(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Tls(e.to_string()))?
        .with_root_certificates(roots);
    let config = match &options.identity {
        None => builder.with_no_client_auth(),
        Some(id) => {
            let bad = |detail: String| ClientError::Tls(format!("client certificate: {detail}"));
            let chain = CertificateDer::pem_slice_iter(&id.cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if chain.is_empty() {
                return Err(bad("no PEM certificate in the data".into()));
            }
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(&id.key_pem)
                .map_err(|e| bad(format!("its key: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad(e.to_string()))?
        }
    };
    let config = Arc::new(config);
    if *options == TlsOptions::default() {
        let _ = DEFAULT.set(config.clone());
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_certificates_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let e = client_config(&TlsOptions::with_ca_file(&path)).unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let e =
            client_config(&TlsOptions::with_ca_file(dir.path().join("missing.pem"))).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
    }

    #[test]
    fn a_generated_ca_is_accepted() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, ca.pem()).unwrap();
        let only = TlsOptions {
            system_roots: false,
            ca_file: Some(path),
            ..TlsOptions::default()
        };
        assert!(client_config(&only).is_ok());
        let in_memory = TlsOptions {
            system_roots: false,
            ca_pem: Some(ca.pem().into_bytes()),
            identity: Some(ClientIdentity {
                cert_pem: ca.pem().into_bytes(),
                key_pem: key.serialize_pem().into_bytes(),
            }),
            ..TlsOptions::default()
        };
        assert!(client_config(&in_memory).is_ok());
        let e = client_config(&TlsOptions {
            ca_pem: Some(b"nothing".to_vec()),
            ..TlsOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
    }
}
