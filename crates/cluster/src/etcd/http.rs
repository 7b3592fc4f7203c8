//! The little HTTP/1.1 and base64 the etcd gateway needs: one POST of a JSON body per
//! connection (`Connection: close`), a response read to its end with `Content-Length` or
//! `Transfer-Encoding: chunked`, bounded in size and time.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The largest response accepted (etcd's own request limit is 1.5 MiB; a range over many
/// keys can be larger, so this is generous).
const MAX_RESPONSE: u64 = 64 << 20;

/// An `http://host:port` base URL, split once.
#[derive(Debug, Clone)]
pub(crate) struct BaseUrl {
    /// `host:port`, as sent in the `Host` header and resolved to connect.
    pub authority: String,
}

impl BaseUrl {
    /// Parses `http://host:port` (a trailing `/` is allowed; no path, no https).
    pub fn parse(url: &str) -> Result<BaseUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| "expected http://HOST:PORT (https is not supported)".to_string())?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains('/') {
            return Err("expected http://HOST:PORT with no path".into());
        }
        let port = authority
            .rsplit_once(':')
            .map(|(_, p)| p)
            .ok_or_else(|| "expected an explicit port (etcd's is usually 2379)".to_string())?;
        port.parse::<u16>()
            .map_err(|_| format!("bad port {port:?}"))?;
        Ok(BaseUrl {
            authority: authority.to_string(),
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
}

/// A response: its status code and its (de-chunked) body.
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// POSTs `body` (JSON) to `path` on `base`, with `connect` bounding each connection attempt
/// and `io` bounding every read and write.
pub(crate) fn post(
    base: &BaseUrl,
    path: &str,
    body: &[u8],
    connect: Duration,
    io_timeout: Duration,
) -> Result<Response, HttpError> {
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
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        base.authority,
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).map_err(HttpError::Io)?;
    let mut raw = Vec::new();
    (&mut stream)
        .take(MAX_RESPONSE)
        .read_to_end(&mut raw)
        .map_err(HttpError::Io)?;
    parse_response(&raw)
}

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
        Err(HttpError::Malformed(m)) => Err(m),
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
        assert!(BaseUrl::parse("https://a:1").is_err());
        assert!(BaseUrl::parse("http://a").is_err());
        assert!(BaseUrl::parse("http://a:1/v3").is_err());
    }
}
