//! The control plane's store: a small blocking client for etcd, and a way to run etcd.
//!
//! sluice keeps membership, placement and leases in [etcd](https://etcd.io) (Debian's
//! `etcd-server`, 3.4 or later), an existing, proven coordination service. [`Etcd`] talks to it
//! through etcd's **v3 JSON gateway** (`POST /v3/kv/range` and friends, keys and values in
//! base64) with a few hundred lines of blocking HTTP/1.1 over `std::net::TcpStream`, rather than
//! through the `etcd-client` crate: that crate needs `protoc` and the tokio/tonic stack to
//! build, which the quick start (only the Rust toolchain) must not need, and the control plane
//! makes a handful of calls a second, so a blocking client is all it takes.
//!
//! Every call opens one connection (`Connection: close`) bounded by a connect timeout and an
//! I/O timeout, so an unreachable etcd is an error within seconds, never a hang. Errors are
//! [`EtcdError`]s that name the URL and the operation.
//!
//! [`EtcdServer`] starts the etcd binary (for tests and local clusters) and [`KeepAlive`] keeps
//! a lease alive from a background thread.
//!
//! ```no_run
//! use sluice_cluster::etcd::{Etcd, KeepAlive};
//! let etcd = Etcd::new("http://127.0.0.1:2379")?;
//! let lease = etcd.grant(5)?;
//! if etcd.put_if_absent("sluice/demo/leader", b"me", Some(lease))? {
//!     let keep = KeepAlive::start(etcd.clone(), lease, 5);
//!     assert!(keep.is_alive());
//! }
//! # Ok::<(), sluice_cluster::etcd::EtcdError>(())
//! ```

mod http;
pub use http::fuzz_response;
mod keepalive;
mod server;

pub use keepalive::KeepAlive;
pub use server::{EtcdOptions, EtcdServer, EtcdServerError};

use http::{b64_decode, b64_encode, BaseUrl, HttpError};
use serde_json::{json, Value};
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
    /// The URL is not `http://HOST:PORT`.
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

/// A blocking client for one etcd endpoint (cheap to clone).
#[derive(Debug, Clone)]
pub struct Etcd {
    url: String,
    base: BaseUrl,
    connect_timeout: Duration,
    io_timeout: Duration,
}

impl Etcd {
    /// A client for the etcd at `url` (`http://HOST:PORT`), with a 2 s connect timeout and a
    /// 5 s I/O timeout. Nothing is contacted yet.
    pub fn new(url: &str) -> Result<Etcd, EtcdError> {
        let base = BaseUrl::parse(url).map_err(|message| EtcdError::BadUrl {
            url: url.to_string(),
            message,
        })?;
        Ok(Etcd {
            url: url.trim_end_matches('/').to_string(),
            base,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
        })
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
    /// [`EtcdError`] naming `op`.
    fn call(&self, path: &str, op: &str, body: &Value) -> Result<Value, EtcdError> {
        let bytes = serde_json::to_vec(body).expect("a JSON value always serializes");
        let response = http::post(
            &self.base,
            path,
            &bytes,
            self.connect_timeout,
            self.io_timeout,
        )
        .map_err(|e| match e {
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
        })?;
        let text = String::from_utf8_lossy(&response.body);
        // A streaming reply (lease keepalive) is one JSON object per line; the first is ours.
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let value: Value = serde_json::from_str(first).map_err(|e| {
            self.server(
                op,
                format!(
                    "HTTP {}: reply is not JSON ({e}): {:.200}",
                    response.status, text
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
        assert!(e.contains("localhost:2379") && e.contains("http://"), "{e}");
    }
}
