//! The little HTTP/1.1 and base64 the etcd gateway needs: one POST of a JSON body per
//! connection (`Connection: close`), over TLS (rustls) or plain TCP, a response read to its end
//! with `Content-Length` or `Transfer-Encoding: chunked`, bounded in size and time.
//!
//! The parser is kept rather than replaced by an HTTP client crate: the maintained blocking
//! clients (ureq, reqwest's blocking mode) bring their own TLS stacks and dozens of crates for
//! one POST per call, where this parser is a hundred lines, bounded (64 MiB, sizes compared
//! with what arrived, never added to) and fuzzed (`fuzz/fuzz_targets/etcd_response.rs`).

use rustls::pki_types::ServerName;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// The largest response accepted (etcd's own request limit is 1.5 MiB; a range over many
/// keys can be larger, so this is generous).
const MAX_RESPONSE: u64 = 64 << 20;

/// An `http://host:port` or `https://host:port` base URL, split once.
#[derive(Debug, Clone)]
pub(crate) struct BaseUrl {
    /// `host:port`, as sent in the `Host` header and resolved to connect.
    pub authority: String,
    /// The host alone (an IP address or a DNS name): the name the server's certificate must
    /// carry.
    pub host: String,
    /// `https://`.
    pub https: bool,
}

impl BaseUrl {
    /// Parses `http://host:port` or `https://host:port` (a trailing `/` is allowed; no path).
    pub fn parse(url: &str) -> Result<BaseUrl, String> {
        let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err("expected https://HOST:PORT (or http:// for an etcd without TLS)".into());
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains('/') {
            return Err("expected http://HOST:PORT with no path".into());
        }
        let (host, port) = authority
            .rsplit_once(':')
            .ok_or_else(|| "expected an explicit port (etcd's is usually 2379)".to_string())?;
        port.parse::<u16>()
            .map_err(|_| format!("bad port {port:?}"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Ok(BaseUrl {
            authority: authority.to_string(),
            host: host.to_string(),
            https,
        })
    }
}

/// What went wrong with one exchange.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// No address could be connected to.
    Connect(io::Error),
    /// Sending the request or reading the response failed (includes timeouts).
    Io(io::Error),
    /// The response is not HTTP/1.1 as expected.
    Malformed(String),
    /// The TLS handshake failed (the server's certificate, or it refused ours).
    Tls(String),
}

/// A response: its status code and its (de-chunked) body.
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// How one exchange is made: the TLS configuration (for `https://`) and extra header lines.
pub(crate) struct Request<'a> {
    /// The TLS client configuration; `None` for plain `http://`.
    pub tls: Option<&'a Arc<rustls::ClientConfig>>,
    /// `Authorization: TOKEN` (etcd's auth token), when there is one.
    pub token: Option<&'a str>,
    /// Bounds each connection attempt.
    pub connect: Duration,
    /// Bounds every read and write (the TLS handshake included).
    pub io: Duration,
}

/// POSTs `body` (JSON) to `path` on `base` as `how` says.
pub(crate) fn post(
    base: &BaseUrl,
    path: &str,
    body: &[u8],
    how: &Request<'_>,
) -> Result<Response, HttpError> {
    let (connect, io_timeout) = (how.connect, how.io);
    let addrs: Vec<SocketAddr> = base
        .authority
        .to_socket_addrs()
        .map_err(HttpError::Connect)?
        .collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host resolved to no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, connect) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let mut stream = stream.ok_or(HttpError::Connect(last))?;
    stream
        .set_read_timeout(Some(io_timeout))
        .map_err(HttpError::Io)?;
    stream
        .set_write_timeout(Some(io_timeout))
        .map_err(HttpError::Io)?;
    stream.set_nodelay(true).map_err(HttpError::Io)?;
    // A token is etcd's (base64 and punctuation); one with a line break would forge headers.
    let auth = match how.token {
        Some(t) if t.bytes().all(|b| b.is_ascii_graphic()) => format!("Authorization: {t}\r\n"),
        Some(_) => {
            return Err(HttpError::Malformed(
                "the auth token is not one header word".into(),
            ))
        }
        None => String::new(),
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         {auth}Content-Length: {}\r\nConnection: close\r\n\r\n",
        base.authority,
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    let raw = match how.tls {
        None => exchange(&mut stream, &request)?,
        Some(config) => {
            let name = ServerName::try_from(base.host.clone()).map_err(|e| {
                HttpError::Malformed(format!("{:?} is not a TLS server name: {e}", base.host))
            })?;
            let conn = rustls::ClientConnection::new(Arc::clone(config), name)
                .map_err(|e| HttpError::Tls(e.to_string()))?;
            let mut tls = rustls::StreamOwned::new(conn, stream);
            exchange(&mut tls, &request).map_err(|e| match e {
                // rustls reports a refused certificate or handshake as an I/O error wrapping
                // its own: name it as TLS.
                HttpError::Io(io) if io.get_ref().is_some_and(|r| r.is::<rustls::Error>()) => {
                    HttpError::Tls(io.to_string())
                }
                other => other,
            })?
        }
    };
    parse_response(&raw)
}

/// Writes the request and reads the response to its end (at most [`MAX_RESPONSE`] bytes).
fn exchange(stream: &mut impl ReadWrite, request: &[u8]) -> Result<Vec<u8>, HttpError> {
    stream.write_all(request).map_err(HttpError::Io)?;
    stream.flush().map_err(HttpError::Io)?;
    let mut raw = Vec::new();
    match (&mut *stream).take(MAX_RESPONSE).read_to_end(&mut raw) {
        Ok(_) => Ok(raw),
        // A TLS peer that closes without close_notify after a whole response: the body's
        // framing (length or final chunk), checked by the parser, says whether it is whole.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !raw.is_empty() => Ok(raw),
        Err(e) => Err(HttpError::Io(e)),
    }
}

/// A byte stream both ways: a TCP socket or a TLS session over one.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Splits a complete response into status and body.
fn parse_response(raw: &[u8]) -> Result<Response, HttpError> {
    let end = find(raw, b"\r\n\r\n")
        .ok_or_else(|| HttpError::Malformed("the response ended inside its header".into()))?;
    let head = std::str::from_utf8(&raw[..end])
        .map_err(|_| HttpError::Malformed("the response header is not UTF-8".into()))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| HttpError::Malformed(format!("bad status line {status_line:?}")))?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| HttpError::Malformed(format!("bad Content-Length {value:?}")))?,
            );
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        if rest.len() < n {
            return Err(HttpError::Malformed(format!(
                "the body ended after {} of its {n} bytes",
                rest.len()
            )));
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

/// Parses a whole response as [`parse_response`] does, for the fuzz target and its replay
/// tests: the status and body, or the error's text. Panics only on a bug (a body longer than
/// the input).
pub fn fuzz_response(raw: &[u8]) -> Result<(u16, usize), String> {
    match parse_response(raw) {
        Ok(r) => {
            assert!(r.body.len() <= raw.len(), "a body longer than the response");
            Ok((r.status, r.body.len()))
        }
        Err(HttpError::Malformed(m) | HttpError::Tls(m)) => Err(m),
        Err(HttpError::Io(e) | HttpError::Connect(e)) => Err(e.to_string()),
    }
}

/// Decodes a chunked body (extensions and trailers ignored).
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let eol = find(rest, b"\r\n")
            .ok_or_else(|| HttpError::Malformed("a chunk size line is cut off".into()))?;
        let line = std::str::from_utf8(&rest[..eol]).unwrap_or("");
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Malformed(format!("bad chunk size {line:?}")))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        // `size` is the peer's word (up to 2^64 − 1): compared with what arrived, never
        // added to.
        if rest.len() < 2 || size > rest.len() - 2 {
            return Err(HttpError::Malformed(format!(
                "a chunk of {size} bytes is cut off after {} bytes",
                rest.len()
            )));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 §4), as the gateway encodes `bytes` fields.
pub(crate) fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` on any other character.
pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length() {
        assert_eq!(b64_encode(b""), "");
        assert_eq!(b64_encode(b"f"), "Zg==");
        assert_eq!(b64_encode(b"fo"), "Zm8=");
        assert_eq!(b64_encode(b"foo"), "Zm9v");
        assert_eq!(b64_encode(b"foobar"), "Zm9vYmFy");
        for n in 0..300usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            assert_eq!(b64_decode(&b64_encode(&data)).unwrap(), data, "length {n}");
        }
        assert!(b64_decode("a*b=").is_none());
    }

    #[test]
    fn responses_with_length_and_chunks() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"{}"[..]));
        let r = parse_response(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"abcde"[..]));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}").is_err());
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
        // A chunk size of 2^64 − 1 (it wrapped `size + 2` and panicked).
        let e = fuzz_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab\r\n0\r\n\r\n",
        )
        .unwrap_err();
        assert!(e.contains("cut off"), "{e}");
    }

    #[test]
    fn urls() {
        assert_eq!(
            BaseUrl::parse("http://10.1.2.1:2379/").unwrap().authority,
            "10.1.2.1:2379"
        );
        let tls = BaseUrl::parse("https://10.1.2.1:2379").unwrap();
        assert!(tls.https && tls.host == "10.1.2.1");
        assert!(BaseUrl::parse("ftp://a:1").is_err());
        assert!(BaseUrl::parse("http://a").is_err());
        assert!(BaseUrl::parse("http://a:1/v3").is_err());
    }
}
