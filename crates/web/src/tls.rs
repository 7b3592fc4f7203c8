//! HTTPS for a console reachable from other machines: a non-loopback bind is served over TLS
//! only (rustls, `ring` provider, TLS 1.3 and 1.2), with a certificate from files or one made
//! at start (`rcgen`) whose SHA-256 fingerprint is printed for the user to check.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::PathBuf;
use std::sync::Arc;

/// Where the console's TLS certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tls {
    /// A self-signed certificate made at start for the bound address and `localhost`; check
    /// its fingerprint ([`crate::Console::fingerprint`]) when the browser asks.
    SelfSigned,
    /// A certificate chain and its private key, PEM files.
    Files {
        /// The certificate chain (the server's first).
        cert: PathBuf,
        /// The private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
}

/// A server configuration and the SHA-256 fingerprint of its certificate (hex, colons).
pub(crate) struct TlsSetup {
    pub config: Arc<rustls::ServerConfig>,
    pub fingerprint: String,
    pub cert_der: Vec<u8>,
}

/// Builds the server side of `tls` for a console bound to `addr`.
pub(crate) fn setup(tls: &Tls, addr: std::net::SocketAddr) -> Result<TlsSetup, String> {
    let (chain, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) = match tls {
        Tls::SelfSigned => {
            let mut names = vec!["localhost".to_string()];
            if !addr.ip().is_unspecified() {
                names.push(addr.ip().to_string());
            }
            let made = rcgen::generate_simple_self_signed(names)
                .map_err(|e| format!("cannot make a certificate: {e}"))?;
            let der = made.cert.der().clone();
            let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
                .map_err(|e| format!("the certificate's key: {e}"))?;
            (vec![der], key)
        }
        Tls::Files { cert, key } => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("{}: {e}", cert.display()))?;
            if chain.is_empty() {
                return Err(format!("{}: no certificate in it", cert.display()));
            }
            let k = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("{}: no private key in it ({e})", key.display()))?;
            (chain, k)
        }
    };
    let cert_der = chain[0].to_vec();
    let digest = ring::digest::digest(&ring::digest::SHA256, &cert_der);
    let fingerprint = digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key do not make a TLS server: {e}"))?;
    Ok(TlsSetup {
        config: Arc::new(config),
        fingerprint,
        cert_der,
    })
}
