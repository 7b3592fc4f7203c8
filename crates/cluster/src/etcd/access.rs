//! [`EtcdAccess`]: what a client shows a secured etcd: the cluster CA it verifies the server
//! against, its own certificate (TLS client authentication, `--client-cert-auth`) and the
//! user it logs in as (etcd's own authentication, `/v3/auth/authenticate`).
//!
//! The files live in one directory, as [`crate::etcd::pki`] writes them:
//!
//! | file | what | checks |
//! |---|---|---|
//! | `ca.pem` | the CA that signed etcd's certificate | others may not write it |
//! | `client.pem` | this client's certificate (no CommonName: etcd 3.4 with auth on refuses one through its gateway) | others may not write it |
//! | `client.key` | its private key | mode 600, the caller's own |
//! | `login` | `USER` and `PASSWORD`, one per line (absent: TLS only, no login) | mode 600, the caller's own |
//!
//! Every file is opened once without following links and checked on the descriptor
//! ([`sluice_net::secure::keys`]), as sluice's other key files are. TLS runs on rustls with the
//! `ring` provider.

use super::EtcdError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sluice_net::secure::keys;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// The CA certificate's file name in an access directory.
pub const CA_FILE: &str = "ca.pem";
/// The client certificate's file name.
pub const CERT_FILE: &str = "client.pem";
/// The client key's file name.
pub const KEY_FILE: &str = "client.key";
/// The login's file name (user and password).
pub const LOGIN_FILE: &str = "login";

/// An etcd user and its password. `Debug` shows the user only.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// The etcd user's name.
    pub user: String,
    password: String,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Login {{ user: {:?}, password: <hidden> }}", self.user)
    }
}

impl Login {
    /// A login; the user is 1 to 64 of `[A-Za-z0-9_.-]` and the password has no line break.
    pub fn new(user: &str, password: &str) -> Result<Login, String> {
        let user_ok = (1..=64).contains(&user.len())
            && user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !user_ok {
            return Err(format!(
                "bad etcd user name {:?}: 1 to 64 letters, digits, `_`, `.` or `-`",
                sluice_net::escape::text(user)
            ));
        }
        if password.is_empty() || password.contains(['\n', '\r']) {
            return Err("an etcd password is one non-empty line".into());
        }
        Ok(Login {
            user: user.to_string(),
            password: password.to_string(),
        })
    }

    /// `user` with a new random password (128 bits from the kernel, as 32 hex digits).
    pub fn generate(user: &str) -> Result<Login, String> {
        use std::io::Read;
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        let password: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Login::new(user, &password)
    }

    /// The password (for `/v3/auth/authenticate` and `/v3/auth/user/add`).
    pub(crate) fn password(&self) -> &str {
        &self.password
    }

    /// The login file's text: the user and the password, one per line.
    pub fn to_file_text(&self) -> String {
        format!("{}\n{}\n", self.user, self.password)
    }

    fn parse(text: &str) -> Result<Login, String> {
        let mut lines = text.lines();
        let user = lines.next().unwrap_or("").trim();
        let password = lines.next().unwrap_or("").trim();
        if lines.any(|l| !l.trim().is_empty()) {
            return Err("expected two lines, the user and the password".into());
        }
        Login::new(user, password)
    }
}

/// A client's credentials for a secured etcd (cheap to clone).
#[derive(Clone)]
pub struct EtcdAccess {
    pub(crate) tls: Arc<rustls::ClientConfig>,
    pub(crate) login: Option<Login>,
    /// Whether a client certificate is presented (for `Debug` and error messages).
    with_cert: bool,
}

impl fmt::Debug for EtcdAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdAccess")
            .field("client_certificate", &self.with_cert)
            .field("login", &self.login)
            .finish()
    }
}

impl EtcdAccess {
    /// Reads the access directory `dir` (see the module's documentation); `login` may be
    /// absent (TLS only).
    pub fn load(dir: &Path) -> Result<EtcdAccess, EtcdError> {
        let read_public = |name: &str| {
            let path = dir.join(name);
            keys::read_public(&path, "etcd certificate file").map_err(|e| access_err(&path, e))
        };
        let ca = read_public(CA_FILE)?;
        let cert = read_public(CERT_FILE)?;
        let key_path = dir.join(KEY_FILE);
        let key = keys::read_secret(&key_path, "etcd client key file")
            .map_err(|e| access_err(&key_path, e))?;
        let login_path = dir.join(LOGIN_FILE);
        let login = match std::fs::symlink_metadata(&login_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => {
                let text = keys::read_secret(&login_path, "etcd login file")
                    .map_err(|e| access_err(&login_path, e))?;
                let text = String::from_utf8(text)
                    .map_err(|_| access_err(&login_path, "not UTF-8 text"))?;
                Some(Login::parse(&text).map_err(|e| access_err(&login_path, e))?)
            }
        };
        EtcdAccess::from_pem(&ca, Some((&cert, &key)), login).map_err(|e| access_err(dir, e))
    }

    /// Credentials from PEM text: the CA, the client's certificate and key (`None`: no
    /// client certificate, which an etcd with `--client-cert-auth` refuses), and a login.
    pub fn from_pem(
        ca: &[u8],
        client: Option<(&[u8], &[u8])>,
        login: Option<Login>,
    ) -> Result<EtcdAccess, String> {
        let mut roots = rustls::RootCertStore::empty();
        let mut cas = 0;
        for cert in CertificateDer::pem_slice_iter(ca) {
            let cert = cert.map_err(|e| format!("{CA_FILE}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("{CA_FILE}: not a usable CA certificate: {e}"))?;
            cas += 1;
        }
        if cas == 0 {
            return Err(format!("{CA_FILE}: no certificate in it"));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("{CERT_FILE}: {e}"))?;
                if chain.is_empty() {
                    return Err(format!("{CERT_FILE}: no certificate in it"));
                }
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| format!("{KEY_FILE}: no private key in it ({e})"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("{CERT_FILE} and {KEY_FILE}: {e}"))?
            }
        };
        Ok(EtcdAccess {
            tls: Arc::new(config),
            with_cert: client.is_some(),
            login,
        })
    }

    /// The same TLS credentials with another login (or none).
    pub fn with_login(&self, login: Option<Login>) -> EtcdAccess {
        EtcdAccess {
            login,
            ..self.clone()
        }
    }

    /// The login, if any.
    pub fn login(&self) -> Option<&Login> {
        self.login.as_ref()
    }
}

fn access_err(path: &Path, message: impl fmt::Display) -> EtcdError {
    EtcdError::Access {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_are_checked_and_hidden() {
        let l = Login::parse("sluice\nsecret\n").unwrap();
        assert_eq!(l.user, "sluice");
        assert_eq!(l.password(), "secret");
        assert!(!format!("{l:?}").contains("secret"));
        assert_eq!(Login::parse(&l.to_file_text()).unwrap(), l);
        assert!(Login::parse("a b\npw\n").is_err());
        assert!(Login::parse("root\n").is_err());
        assert!(Login::parse("u\np\nmore\n").is_err());
        assert!(Login::new("u", "p\nq").is_err());
    }

    #[test]
    fn pem_without_certificates_is_refused() {
        let e = EtcdAccess::from_pem(b"", None, None).unwrap_err();
        assert!(e.contains("no certificate"), "{e}");
    }
}
