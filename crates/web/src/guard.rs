//! Who may do what: the `Host` check (against DNS rebinding), the token and the same-origin
//! `Origin` that every request that changes anything, and every stream, must carry.
//!
//! The console binds to loopback, but loopback is not a boundary against a web page in the
//! user's own browser: any site can make the browser send requests to `127.0.0.1`, and a
//! rebinding domain can even make them look same-origin. So: the `Host` must name the address
//! we serve (a rebinding domain's name fails), and a change or a stream needs both the token
//! (which another site cannot read) and an `Origin` equal to our own. No CORS headers are ever
//! sent, so no other origin can read an answer either.

use crate::http::{HttpError, Request};

/// The access rules of one console.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    hosts: Vec<String>,
    /// `http` or `https`: what the `Origin` of our own page starts with.
    scheme: &'static str,
    /// Bound to every address (HTTPS only): any host name on our port is ours, since a
    /// rebinding domain's name fails the browser's certificate check instead.
    any_host_port: Option<u16>,
}

/// A fresh random token: 128 bits from the kernel's generator, as 32 hex digits.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Guard {
    /// Rules for a console serving on `addr` with `token`.
    pub fn new(addr: std::net::SocketAddr, token: String) -> Self {
        Self::with_scheme(addr, token, false)
    }

    /// Rules for a console serving on `addr` with `token`, over HTTPS when `tls`.
    pub fn with_scheme(addr: std::net::SocketAddr, token: String, tls: bool) -> Self {
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.push(format!("localhost:{port}"));
            hosts.push(format!("127.0.0.1:{port}"));
            hosts.push(format!("[::1]:{port}"));
        }
        Guard {
            token,
            hosts,
            scheme: if tls { "https" } else { "http" },
            any_host_port: (tls && addr.ip().is_unspecified()).then_some(port),
        }
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Refuses a request whose `Host` is not one of ours (421), or that has none (400).
    pub fn check_host<'r>(&self, req: &'r Request) -> Result<&'r str, HttpError> {
        let host = req
            .header("host")
            .ok_or_else(|| HttpError::new(400, "the Host header is missing"))?;
        let any = self.any_host_port.is_some_and(|port| {
            host.rsplit_once(':').is_some_and(|(name, p)| {
                p == port.to_string()
                    && !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-.[]:".contains(&b))
            })
        });
        if any || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            Ok(host)
        } else {
            Err(HttpError::new(
                421,
                format!(
                    "Host '{}' is not this console's address (expected one of {})",
                    host.escape_default(),
                    self.hosts.join(", ")
                ),
            ))
        }
    }

    /// Refuses a change or a stream without the token (401) or from another origin (403).
    pub fn check_change(&self, req: &Request) -> Result<(), HttpError> {
        let host = self.check_host(req)?;
        let given = req
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                HttpError::new(
                    401,
                    "the token is missing: send 'Authorization: Bearer TOKEN' (printed at start)",
                )
            })?;
        if !constant_time_eq(given.trim().as_bytes(), self.token.as_bytes()) {
            return Err(HttpError::new(401, "the token is wrong"));
        }
        let origin = req.header("origin").ok_or_else(|| {
            HttpError::new(
                403,
                "the Origin header is missing (a change must come from the console's page)",
            )
        })?;
        let scheme = self.scheme;
        if origin != format!("{scheme}://{host}") {
            return Err(HttpError::new(
                403,
                format!(
                    "Origin '{}' is not this console's (expected {scheme}://{host})",
                    origin.escape_default()
                ),
            ));
        }
        Ok(())
    }
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "POST".into(),
            path: "/api/stop".into(),
            query: String::new(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn host_token_and_origin_are_all_required() {
        let g = Guard::new("127.0.0.1:8080".parse().unwrap(), "t0k".into());
        let ok = [
            ("host", "127.0.0.1:8080"),
            ("authorization", "Bearer t0k"),
            ("origin", "http://127.0.0.1:8080"),
        ];
        assert!(g.check_change(&req(&ok)).is_ok());
        assert_eq!(g.check_change(&req(&ok[..2])).unwrap_err().status, 403);
        assert_eq!(
            g.check_change(&req(&[ok[0], ok[2]])).unwrap_err().status,
            401
        );
        let wrong_token = [ok[0], ("authorization", "Bearer t0x"), ok[2]];
        assert_eq!(g.check_change(&req(&wrong_token)).unwrap_err().status, 401);
        let rebound = [
            ("host", "evil.example:8080"),
            ok[1],
            ("origin", "http://evil.example:8080"),
        ];
        assert_eq!(g.check_change(&req(&rebound)).unwrap_err().status, 421);
        let other_site = [ok[0], ok[1], ("origin", "http://evil.example")];
        assert_eq!(g.check_change(&req(&other_site)).unwrap_err().status, 403);
        assert!(g.check_host(&req(&[("host", "localhost:8080")])).is_ok());
        assert_eq!(new_token().unwrap().len(), 32);
    }

    #[test]
    fn over_https_on_every_address_any_name_on_our_port_is_ours_with_an_https_origin() {
        let g = Guard::with_scheme("0.0.0.0:8443".parse().unwrap(), "t0k".into(), true);
        let ok = [
            ("host", "box.lan:8443"),
            ("authorization", "Bearer t0k"),
            ("origin", "https://box.lan:8443"),
        ];
        assert!(g.check_change(&req(&ok)).is_ok());
        let plain_origin = [ok[0], ok[1], ("origin", "http://box.lan:8443")];
        assert_eq!(g.check_change(&req(&plain_origin)).unwrap_err().status, 403);
        assert_eq!(
            g.check_host(&req(&[("host", "box.lan:9999")]))
                .unwrap_err()
                .status,
            421
        );
        assert_eq!(
            g.check_host(&req(&[("host", "a b:8443")]))
                .unwrap_err()
                .status,
            421
        );
        // Over plain HTTP the names stay the bound address's own.
        let plain = Guard::new("127.0.0.1:8080".parse().unwrap(), "t0k".into());
        assert_eq!(
            plain
                .check_host(&req(&[("host", "box.lan:8080")]))
                .unwrap_err()
                .status,
            421
        );
    }
}
