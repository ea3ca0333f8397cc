//! Certificates for TLS tests: a CA made in the test and a server
//! certificate it signed for `127.0.0.1` and `localhost`, written as PEM
//! files, so a server can serve HTTPS from them and a client trust the CA.

use std::path::{Path, PathBuf};

/// The PEM files [`certificates`] wrote.
#[derive(Debug, Clone)]
pub struct TestCertificates {
    /// The CA's certificate (what a client trusts).
    pub ca: PathBuf,
    /// The server's certificate, signed by the CA.
    pub cert: PathBuf,
    /// The server certificate's private key.
    pub key: PathBuf,
}

/// Makes a CA and a server certificate it signed for `127.0.0.1` and
/// `localhost`, and writes them into `dir`.
pub fn certificates(dir: &Path) -> Result<TestCertificates, CertificateError> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "openhands test CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = rcgen::KeyPair::generate()?;
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
    let cert = params.signed_by(&server_key, &issuer)?;
    let out = TestCertificates {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server-key.pem"),
    };
    std::fs::write(&out.ca, ca.pem())?;
    std::fs::write(&out.cert, cert.pem())?;
    std::fs::write(&out.key, server_key.serialize_pem())?;
    Ok(out)
}

/// Why the certificates could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// rcgen refused.
    #[error("making the test certificates: {0}")]
    Make(#[from] rcgen::Error),
    /// Writing a file failed.
    #[error("writing the test certificates: {0}")]
    Write(#[from] std::io::Error),
}
