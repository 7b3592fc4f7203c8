//! A cluster's own certificates for etcd, made with `rcgen`: a CA, etcd's server certificate
//! (also its peer certificate) and a client certificate, ECDSA P-256.
//!
//! etcd's `--auto-tls` makes self-signed certificates that no client can verify, so sluice
//! makes its own CA and gives its clients the CA certificate. The client certificate has no
//! CommonName (its subject is `O=sluice`): etcd 3.4 with authentication on takes a client
//! certificate's CommonName as the user and its JSON gateway then refuses the request (HTTP
//! 400), so clients log in with a user and a password instead ([`super::EtcdAccess`]). Private
//! keys are written mode 600, never over an existing file.
//!
//! [`EtcdPki::create`] writes into `DIR`:
//!
//! ```text
//! DIR/ca.pem  DIR/ca.key           the CA (its key stays here, for more client certificates)
//! DIR/server.pem  DIR/server.key   etcd's certificate for the names given, server and client use
//! DIR/client/ca.pem client.pem client.key   a client's access directory (EtcdAccess::load)
//! ```

use super::access::{CA_FILE, CERT_FILE, KEY_FILE};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// What went wrong making or writing the certificates.
#[derive(Debug, thiserror::Error)]
#[error("etcd certificates in {dir}: {message}")]
pub struct PkiError {
    /// The directory written to.
    pub dir: PathBuf,
    /// What failed.
    pub message: String,
}

/// The files etcd serves TLS with ([`super::EtcdOptions::tls`]).
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// The CA that signed the clients' certificates (`--trusted-ca-file`).
    pub ca_file: PathBuf,
    /// etcd's certificate (`--cert-file`, also `--peer-cert-file`).
    pub cert_file: PathBuf,
    /// Its private key (`--key-file`, also `--peer-key-file`).
    pub key_file: PathBuf,
}

/// A cluster's etcd certificates, as written by [`EtcdPki::create`].
#[derive(Debug, Clone)]
pub struct EtcdPki {
    /// What etcd serves with.
    pub server: ServerTls,
    /// The client's access directory (no `login` yet: the caller adds it).
    pub client_dir: PathBuf,
}

impl EtcdPki {
    /// Makes a CA, a server certificate for `server_ips` and a client certificate, and writes
    /// them into `dir` (created mode 700 if missing). `label` names the cluster in the
    /// certificates' subjects.
    pub fn create(dir: &Path, label: &str, server_ips: &[IpAddr]) -> Result<EtcdPki, PkiError> {
        let fail = |message: String| PkiError {
            dir: dir.to_path_buf(),
            message,
        };
        let rc = |what: &str| {
            let what = what.to_string();
            move |e: rcgen::Error| fail(format!("{what}: {e}"))
        };
        let client_dir = dir.join("client");
        for d in [dir, client_dir.as_path()] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(|e| fail(format!("{}: {e}", d.display())))?;
        }

        let ca_key = KeyPair::generate().map_err(rc("CA key"))?;
        let mut ca = CertificateParams::default();
        ca.distinguished_name = subject(&format!("sluice etcd CA {label}"), true);
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).map_err(rc("CA certificate"))?;
        let issuer = Issuer::new(ca, &ca_key);

        let server_key = KeyPair::generate().map_err(rc("server key"))?;
        let mut server =
            CertificateParams::new(server_ips.iter().map(IpAddr::to_string).collect::<Vec<_>>())
                .map_err(rc("server names"))?;
        server.distinguished_name = subject(&format!("sluice etcd {label}"), true);
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Client use too: the same certificate serves etcd's peer port, where members are
        // each other's clients.
        server.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let server_cert = server
            .signed_by(&server_key, &issuer)
            .map_err(rc("server certificate"))?;

        let client_key = KeyPair::generate().map_err(rc("client key"))?;
        let mut client = CertificateParams::default();
        client.distinguished_name = subject(label, false);
        client.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client
            .signed_by(&client_key, &issuer)
            .map_err(rc("client certificate"))?;

        let public = |path: &Path, text: &str| {
            write_new(path, text, 0o644).map_err(|e| fail(format!("{}: {e}", path.display())))
        };
        let secret = |path: &Path, text: &str| {
            sluice_net::secure::keys::create_secret(path, "etcd key file", text)
                .map_err(|e| fail(e.to_string()))
        };
        public(&dir.join(CA_FILE), &ca_cert.pem())?;
        secret(&dir.join("ca.key"), &ca_key.serialize_pem())?;
        public(&dir.join("server.pem"), &server_cert.pem())?;
        secret(&dir.join("server.key"), &server_key.serialize_pem())?;
        public(&client_dir.join(CA_FILE), &ca_cert.pem())?;
        public(&client_dir.join(CERT_FILE), &client_cert.pem())?;
        secret(&client_dir.join(KEY_FILE), &client_key.serialize_pem())?;
        Ok(EtcdPki {
            server: ServerTls {
                ca_file: dir.join(CA_FILE),
                cert_file: dir.join("server.pem"),
                key_file: dir.join("server.key"),
            },
            client_dir,
        })
    }
}

/// A subject: `O=sluice`, `OU=label`, and a CommonName only where `common_name` (never on a
/// client certificate, see the module's documentation).
fn subject(label: &str, common_name: bool) -> rcgen::DistinguishedName {
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(DnType::OrganizationName, "sluice");
    if common_name {
        dn.push(DnType::CommonName, label);
    } else {
        dn.push(DnType::OrganizationalUnitName, label);
    }
    dn
}

/// Creates `path` with `mode`, never over an existing file or through a link.
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pki_dir = dir.path().join("pki");
        let pki = EtcdPki::create(&pki_dir, "t", &["127.0.0.1".parse().unwrap()]).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&pki.server.key_file), 0o600);
        assert_eq!(mode(&pki_dir.join("ca.key")), 0o600);
        assert_eq!(mode(&pki.client_dir.join(KEY_FILE)), 0o600);
        assert_eq!(mode(&pki_dir), 0o700);
        // The client's directory loads (TLS only: no login yet).
        let access = super::super::EtcdAccess::load(&pki.client_dir).unwrap();
        assert!(access.login().is_none());
        // Never over existing files.
        assert!(EtcdPki::create(&pki_dir, "t", &[]).is_err());
    }
}
