//! The control plane's store: a small blocking client for etcd, and a way to run etcd.
//!
//! sluice keeps membership, placement and leases in [etcd](https://etcd.io) (Debian's
//! `etcd-server`, 3.4 or later), an existing, proven coordination service. [`Etcd`] talks to it
//! through etcd's **v3 JSON gateway** (`POST /v3/kv/range` and friends, keys and values in
//! base64) with a few hundred lines of blocking HTTP/1.1, rather than through the `etcd-client`
//! crate: that crate needs `protoc` and the tokio/tonic stack to build, which the quick start
//! (only the Rust toolchain) must not need, and the control plane makes a handful of calls a
//! second, so a blocking client is all it takes.
//!
//! **Secured etcd.** With `https://` and an [`EtcdAccess`] the client speaks TLS (rustls, the
//! `ring` provider), verifies etcd's certificate against the cluster's CA, presents its own
//! client certificate (etcd's `--client-cert-auth`) and, when the access has a [`Login`], logs
//! in (`/v3/auth/authenticate`) and sends the token with every call, logging in again when etcd
//! says the token expired. [`pki`] makes the certificates, [`auth`] creates the users and roles
//! and turns authentication on, [`EtcdServer`] starts etcd with TLS.
//!
//! Every call opens one connection (`Connection: close`) bounded by a connect timeout and an
//! I/O timeout, so an unreachable etcd is an error within seconds, never a hang. Errors are
//! [`EtcdError`]s that name the URL and the operation.
//!
//! [`KeepAlive`] keeps a lease alive from a background thread.
//!
//! ```no_run
//! use sluice_cluster::etcd::{Etcd, EtcdAccess, KeepAlive};
//! let access = EtcdAccess::load("/run/sluice/clusters/c1/etcd/client".as_ref())?;
//! let etcd = Etcd::secure("https://10.1.2.1:2379", access)?;
//! let lease = etcd.grant(5)?;
//! if etcd.put_if_absent("/sluice/c1/demo/leader", b"me", Some(lease))? {
//!     let keep = KeepAlive::start(etcd.clone(), lease, 5);
//!     assert!(keep.is_alive());
//! }
//! # Ok::<(), sluice_cluster::etcd::EtcdError>(())
//! ```

mod access;
pub mod auth;
mod http;
pub use http::fuzz_response;
mod keepalive;
pub mod pki;
mod server;

pub use access::{EtcdAccess, Login, CA_FILE, CERT_FILE, KEY_FILE, LOGIN_FILE};
pub use keepalive::KeepAlive;
pub use server::{EtcdOptions, EtcdServer, EtcdServerError};

use http::{b64_decode, b64_encode, BaseUrl, HttpError};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An etcd lease's id, as [`Etcd::grant`] returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseId(pub i64);

/// One key's value and its revisions, as [`Etcd::get_entry`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Vec<u8>,
    /// The store revision of the last change to this key.
    pub mod_revision: i64,
    /// The store revision at which this key was created.
    pub create_revision: i64,
    /// The lease the key is attached to, if any.
    pub lease: Option<LeaseId>,
}

/// Why a call to etcd failed. Each variant names the etcd URL and the operation.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// The URL is not `https://HOST:PORT` (or `http://` without credentials).
    #[error("etcd URL {url:?}: {message}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// No connection could be made (refused, unreachable, or the connect timeout passed).
    #[error(
        "etcd at {url}: {op}: cannot connect: {source} (is etcd running and listening there?)"
    )]
    Connect {
        /// The etcd URL.
        url: String,
        /// The operation, e.g. `put sluice/x`.
        op: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The connection failed or timed out during the exchange.
    #[error("etcd at {url}: {op}: {source}")]
    Io {
        /// The etcd URL.
        url: String,
        /// The operation.
        op: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// etcd (or whatever answered) replied with an error or something that is not the
    /// gateway's JSON.
    #[error("etcd at {url}: {op}: {message}")]
    Server {
        /// The etcd URL.
        url: String,
        /// The operation.
        op: String,
        /// The HTTP status and etcd's message, or what was malformed.
        message: String,
    },
    /// The TLS handshake failed: etcd's certificate is not the cluster CA's, or etcd refused
    /// this client's.
    #[error("etcd at {url}: {op}: TLS: {message}")]
    Tls {
        /// The etcd URL.
        url: String,
        /// The operation.
        op: String,
        /// rustls's or the socket's account.
        message: String,
    },
    /// The access files (CA, client certificate and key, login) could not be used.
    #[error("etcd access {path}: {message}")]
    Access {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The lease does not exist any more (it expired or was revoked).
    #[error("etcd at {url}: {op}: lease {lease:x} has expired or was revoked")]
    LeaseExpired {
        /// The etcd URL.
        url: String,
        /// The operation.
        op: String,
        /// The lease's id.
        lease: i64,
    },
}

/// A blocking client for one etcd endpoint (cheap to clone; clones share the login token).
#[derive(Debug, Clone)]
pub struct Etcd {
    url: String,
    base: BaseUrl,
    connect_timeout: Duration,
    io_timeout: Duration,
    access: Option<Arc<Secured>>,
}

/// The credentials of a secured client and the token of its current login.
#[derive(Debug)]
struct Secured {
    access: EtcdAccess,
    /// etcd's token for [`EtcdAccess::login`], once logged in. Never printed.
    token: Mutex<Option<String>>,
    /// How many times a token was obtained.
    logins: std::sync::atomic::AtomicU64,
}

impl Etcd {
    /// A client for an etcd without TLS at `url` (`http://HOST:PORT`), with a 2 s connect
    /// timeout and a 5 s I/O timeout. Nothing is contacted yet. For `https://` use
    /// [`Etcd::secure`].
    pub fn new(url: &str) -> Result<Etcd, EtcdError> {
        Etcd::connect(url, None)
    }

    /// A client for a secured etcd at `url` (`https://HOST:PORT`): TLS verified against the
    /// access's CA, its client certificate, and its login when it has one.
    pub fn secure(url: &str, access: EtcdAccess) -> Result<Etcd, EtcdError> {
        Etcd::connect(url, Some(access))
    }

    /// [`Etcd::new`] or [`Etcd::secure`], as `access` is absent or given: `https://` needs
    /// access, and access needs `https://` (credentials never go out in clear).
    pub fn connect(url: &str, access: Option<EtcdAccess>) -> Result<Etcd, EtcdError> {
        let bad = |message: &str| EtcdError::BadUrl {
            url: url.to_string(),
            message: message.to_string(),
        };
        let base = BaseUrl::parse(url).map_err(|m| bad(&m))?;
        match (&access, base.https) {
            (None, true) => {
                return Err(bad(
                    "https needs the etcd access directory (CA, client certificate, login: \
                     --etcd-access DIR)",
                ))
            }
            (Some(_), false) => {
                return Err(bad(
                    "etcd credentials are only sent over TLS: the URL must be https://",
                ))
            }
            _ => {}
        }
        Ok(Etcd {
            url: url.trim_end_matches('/').to_string(),
            base,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
            access: access.map(|access| {
                Arc::new(Secured {
                    access,
                    token: Mutex::new(None),
                    logins: std::sync::atomic::AtomicU64::new(0),
                })
            }),
        })
    }

    /// How many times this client and its clones logged in (the first call, then once per
    /// expired token).
    pub fn logins(&self) -> u64 {
        self.access
            .as_ref()
            .map_or(0, |s| s.logins.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The credentials this client uses, if it is secured.
    pub fn access(&self) -> Option<&EtcdAccess> {
        self.access.as_ref().map(|s| &s.access)
    }

    /// The same client with other timeouts: `connect` per connection attempt, `io` per read
    /// or write.
    pub fn with_timeouts(mut self, connect: Duration, io: Duration) -> Etcd {
        self.connect_timeout = connect;
        self.io_timeout = io;
        self
    }

    /// The URL this client talks to (without a trailing `/`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sets `key` to `value`, attached to `lease` when one is given (the key is deleted when
    /// the lease expires).
    pub fn put(&self, key: &str, value: &[u8], lease: Option<LeaseId>) -> Result<(), EtcdError> {
        let mut body = json!({ "key": b64_encode(key.as_bytes()), "value": b64_encode(value) });
        if let Some(l) = lease {
            body["lease"] = json!(l.0.to_string());
        }
        self.call("/v3/kv/put", &format!("put {key}"), &body)
            .map(drop)
    }

    /// The value of `key`, or `None` when it does not exist.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, EtcdError> {
        Ok(self.get_entry(key)?.map(|e| e.value))
    }

    /// The value of `key` with its revisions and lease, or `None` when it does not exist.
    pub fn get_entry(&self, key: &str) -> Result<Option<Entry>, EtcdError> {
        let op = format!("get {key}");
        let body = json!({ "key": b64_encode(key.as_bytes()) });
        let reply = self.call("/v3/kv/range", &op, &body)?;
        let kvs = self.kvs(&reply, &op)?;
        Ok(kvs.into_iter().next().map(|(_, e)| e))
    }

    /// Every key that starts with `prefix` and its value, sorted by key.
    pub fn get_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, EtcdError> {
        let op = format!("get prefix {prefix}");
        let body = json!({
            "key": b64_encode(prefix.as_bytes()),
            "range_end": b64_encode(&range_end(prefix.as_bytes())),
        });
        let reply = self.call("/v3/kv/range", &op, &body)?;
        Ok(self
            .kvs(&reply, &op)?
            .into_iter()
            .map(|(k, e)| (k, e.value))
            .collect())
    }

    /// Deletes `key`; returns how many keys were deleted (0 or 1).
    pub fn delete(&self, key: &str) -> Result<u64, EtcdError> {
        let body = json!({ "key": b64_encode(key.as_bytes()) });
        self.deleted(&body, &format!("delete {key}"))
    }

    /// Deletes every key that starts with `prefix`; returns how many were deleted.
    pub fn delete_prefix(&self, prefix: &str) -> Result<u64, EtcdError> {
        let body = json!({
            "key": b64_encode(prefix.as_bytes()),
            "range_end": b64_encode(&range_end(prefix.as_bytes())),
        });
        self.deleted(&body, &format!("delete prefix {prefix}"))
    }

    /// Grants a lease of `ttl_s` seconds (at least 1; etcd may round it up to its minimum).
    pub fn grant(&self, ttl_s: i64) -> Result<LeaseId, EtcdError> {
        self.grant_with_ttl(ttl_s).map(|(id, _)| id)
    }

    /// Grants a lease of `ttl_s` seconds and returns it with the TTL etcd granted: more than
    /// asked when etcd's minimum (1.5 election timeouts, rounded up) is longer.
    pub fn grant_with_ttl(&self, ttl_s: i64) -> Result<(LeaseId, i64), EtcdError> {
        let op = format!("grant lease of {ttl_s} s");
        let reply = self.call("/v3/lease/grant", &op, &json!({ "TTL": ttl_s.to_string() }))?;
        let id = int(&reply["ID"]).filter(|&id| id != 0);
        let id = id
            .map(LeaseId)
            .ok_or_else(|| self.server(&op, format!("no lease id in the reply {reply}")))?;
        let ttl = int(&reply["TTL"])
            .ok_or_else(|| self.server(&op, format!("no TTL in the reply {reply}")))?;
        Ok((id, ttl))
    }

    /// Renews `lease` once; returns its remaining time to live in seconds, or
    /// [`EtcdError::LeaseExpired`] when it no longer exists.
    pub fn keep_alive_once(&self, lease: LeaseId) -> Result<i64, EtcdError> {
        let op = format!("keep lease {:x} alive", lease.0);
        let reply = self.call(
            "/v3/lease/keepalive",
            &op,
            &json!({ "ID": lease.0.to_string() }),
        )?;
        // The gateway streams the replies: `{"result": {...}}` (or `{"error": ...}`).
        if let Some(err) = reply.get("error") {
            return Err(self.server(&op, format!("etcd says {err}")));
        }
        let ttl = int(&reply["result"]["TTL"]).unwrap_or(0);
        if ttl <= 0 {
            return Err(EtcdError::LeaseExpired {
                url: self.url.clone(),
                op,
                lease: lease.0,
            });
        }
        Ok(ttl)
    }

    /// Revokes `lease`: the keys attached to it are deleted now.
    pub fn revoke(&self, lease: LeaseId) -> Result<(), EtcdError> {
        let op = format!("revoke lease {:x}", lease.0);
        match self.call(
            "/v3/lease/revoke",
            &op,
            &json!({ "ID": lease.0.to_string() }),
        ) {
            Ok(_) => Ok(()),
            Err(EtcdError::Server { message, .. }) if message.contains("lease not found") => {
                Err(EtcdError::LeaseExpired {
                    url: self.url.clone(),
                    op,
                    lease: lease.0,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Creates `key` with `value` (attached to `lease` when given) only if it does not exist,
    /// atomically (a transaction comparing its create revision with 0). Returns whether this
    /// call created it: the building block of leader and primary leases.
    pub fn put_if_absent(
        &self,
        key: &str,
        value: &[u8],
        lease: Option<LeaseId>,
    ) -> Result<bool, EtcdError> {
        let k = b64_encode(key.as_bytes());
        let mut put = json!({ "key": k, "value": b64_encode(value) });
        if let Some(l) = lease {
            put["lease"] = json!(l.0.to_string());
        }
        let body = json!({
            "compare": [{ "target": "CREATE", "result": "EQUAL", "key": k, "create_revision": "0" }],
            "success": [{ "request_put": put }],
        });
        let reply = self.call("/v3/kv/txn", &format!("put {key} if absent"), &body)?;
        Ok(reply["succeeded"].as_bool().unwrap_or(false))
    }

    /// The names of the etcd cluster's members (`/v3/cluster/member/list`); a member that has
    /// not started yet has an empty name.
    pub fn member_names(&self) -> Result<Vec<String>, EtcdError> {
        let reply = self.call("/v3/cluster/member/list", "list members", &json!({}))?;
        Ok(reply["members"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .map(|m| m["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn deleted(&self, body: &Value, op: &str) -> Result<u64, EtcdError> {
        let reply = self.call("/v3/kv/deleterange", op, body)?;
        Ok(int(&reply["deleted"]).unwrap_or(0).max(0) as u64)
    }

    /// Decodes a range reply's `kvs`.
    fn kvs(&self, reply: &Value, op: &str) -> Result<Vec<(String, Entry)>, EtcdError> {
        let Some(kvs) = reply.get("kvs") else {
            return Ok(Vec::new());
        };
        let kvs = kvs
            .as_array()
            .ok_or_else(|| self.server(op, format!("`kvs` is not a list in {reply}")))?;
        kvs.iter()
            .map(|kv| {
                let bad = || self.server(op, format!("malformed key-value {kv}"));
                let key = b64_decode(kv["key"].as_str().ok_or_else(bad)?).ok_or_else(bad)?;
                let value = match kv.get("value") {
                    Some(v) => b64_decode(v.as_str().ok_or_else(bad)?).ok_or_else(bad)?,
                    None => Vec::new(),
                };
                let entry = Entry {
                    value,
                    mod_revision: int(&kv["mod_revision"]).unwrap_or(0),
                    create_revision: int(&kv["create_revision"]).unwrap_or(0),
                    lease: int(&kv["lease"]).filter(|&l| l != 0).map(LeaseId),
                };
                Ok((String::from_utf8_lossy(&key).into_owned(), entry))
            })
            .collect()
    }

    fn server(&self, op: &str, message: String) -> EtcdError {
        EtcdError::Server {
            url: self.url.clone(),
            op: op.to_string(),
            message,
        }
    }

    /// POSTs `body` to `path` and returns the reply's JSON, turning every failure into an
    /// [`EtcdError`] naming `op`. A secured client with a login sends its token, logging in
    /// first when it has none and again (once) when etcd says the token is no longer valid
    /// (simple tokens expire after `--auth-token-ttl`, 300 s by default).
    fn call(&self, path: &str, op: &str, body: &Value) -> Result<Value, EtcdError> {
        let Some(secured) = self.access.as_ref().filter(|s| s.access.login.is_some()) else {
            return self.call_once(path, op, body, None);
        };
        let token = self.token(secured, false)?;
        match self.call_once(path, op, body, Some(&token)) {
            Err(EtcdError::Server { message, .. }) if message.contains("invalid auth token") => {
                let token = self.token(secured, true)?;
                self.call_once(path, op, body, Some(&token))
            }
            other => other,
        }
    }

    /// The current login's token: the one held, or a new one (`fresh`, or none held).
    fn token(&self, secured: &Secured, fresh: bool) -> Result<String, EtcdError> {
        let mut held = secured.token.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(t), false) = (held.as_ref(), fresh) {
            return Ok(t.clone());
        }
        let login = secured.access.login.as_ref().expect("called with a login");
        let op = format!("log in as etcd user {}", login.user);
        let body = json!({ "name": login.user, "password": login.password() });
        let reply = self.call_once("/v3/auth/authenticate", &op, &body, None)?;
        let token = reply["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| self.server(&op, "no token in the reply".into()))?
            .to_string();
        *held = Some(token.clone());
        secured
            .logins
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(token)
    }

    /// One exchange, with `token` when given.
    fn call_once(
        &self,
        path: &str,
        op: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Result<Value, EtcdError> {
        let bytes = serde_json::to_vec(body).expect("a JSON value always serializes");
        let how = http::Request {
            tls: self.access.as_ref().map(|s| &s.access.tls),
            token,
            connect: self.connect_timeout,
            io: self.io_timeout,
        };
        let response = http::post(&self.base, path, &bytes, &how).map_err(|e| match e {
            HttpError::Connect(source) => EtcdError::Connect {
                url: self.url.clone(),
                op: op.to_string(),
                source,
            },
            HttpError::Io(source) => EtcdError::Io {
                url: self.url.clone(),
                op: op.to_string(),
                source,
            },
            HttpError::Malformed(m) => self.server(op, format!("not an etcd gateway: {m}")),
            HttpError::Tls(message) => EtcdError::Tls {
                url: self.url.clone(),
                op: op.to_string(),
                message,
            },
        })?;
        let text = String::from_utf8_lossy(&response.body);
        // A streaming reply (lease keepalive) is one JSON object per line; the first is ours.
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        // What the server says reaches logs and terminals: escaped, and cut short.
        let shown = |t: &str| sluice_net::escape::text(&t.chars().take(200).collect::<String>());
        let value: Value = serde_json::from_str(first).map_err(|e| {
            self.server(
                op,
                format!(
                    "HTTP {}: reply is not JSON ({e}): {}",
                    response.status,
                    shown(&text)
                ),
            )
        })?;
        if response.status != 200 {
            let message = value
                .get("message")
                .or_else(|| value.get("error"))
                .map(|m| {
                    m.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| m.to_string())
                })
                .unwrap_or_else(|| value.to_string());
            let message = shown(&message);
            return Err(self.server(op, format!("HTTP {}: {message}", response.status)));
        }
        Ok(value)
    }
}

/// The end of the range of keys starting with `prefix`: the prefix with its last byte that
/// is not 0xff incremented (and what follows dropped); `\0` (all keys) for an empty or all-0xff
/// prefix.
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// An int64 field as the gateway writes it (a JSON string; a number is accepted too).
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_ends() {
        assert_eq!(range_end(b"a/"), b"a0");
        assert_eq!(range_end(b"a\xff"), b"b");
        assert_eq!(range_end(b""), b"\0");
        assert_eq!(range_end(b"\xff\xff"), b"\0");
    }

    #[test]
    fn bad_urls_are_named() {
        let e = Etcd::new("localhost:2379").unwrap_err().to_string();
        assert!(
            e.contains("localhost:2379") && e.contains("https://"),
            "{e}"
        );
        let e = Etcd::new("https://10.0.0.1:2379").unwrap_err().to_string();
        assert!(e.contains("access directory"), "{e}");
    }
}
