//! A bounded HTTP/1.1 request parser and response writer on std.
//!
//! Nothing a client sends is trusted: the request head is at most [`MAX_HEAD_BYTES`] bytes and
//! [`MAX_HEADERS`] lines, a body at most [`MAX_BODY`] bytes and only with a `Content-Length`
//! (no chunked uploads), and every violation is an [`HttpError`] carrying the 4xx status and
//! the reason sent back. One request per connection (`Connection: close`): a console needs no
//! keep-alive, and it bounds what one connection can hold.

use std::io::{BufRead, Read, Write};

/// The longest request head (request line and headers) accepted, in bytes.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header lines accepted.
pub const MAX_HEADERS: usize = 64;
/// The largest request body accepted, in bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string (after `?`), possibly empty.
    pub query: String,
    /// Header names in lower case, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body (empty without `Content-Length`).
    pub body: Vec<u8>,
}

impl Request {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A request the server refuses, with the status and the reason it sends back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {reason}")]
pub struct HttpError {
    /// The HTTP status (4xx for the client's mistakes).
    pub status: u16,
    /// What was wrong and what was expected, in words.
    pub reason: String,
}

impl HttpError {
    /// An error with `status` and `reason`.
    pub fn new(status: u16, reason: impl Into<String>) -> Self {
        HttpError {
            status,
            reason: reason.into(),
        }
    }
}

/// Reads one line of the head, counting its bytes against `budget`.
fn read_line(r: &mut impl BufRead, budget: &mut usize) -> Result<String, HttpError> {
    let mut line = Vec::new();
    let limit = (*budget as u64).saturating_add(1);
    let n = r
        .take(limit)
        .read_until(b'\n', &mut line)
        .map_err(|e| HttpError::new(408, format!("reading the request: {e}")))?;
    if n == 0 {
        return Err(HttpError::new(
            400,
            "the connection closed before a full request head",
        ));
    }
    if n > *budget || !line.ends_with(b"\n") {
        return Err(HttpError::new(
            431,
            format!("the request head is over {MAX_HEAD_BYTES} bytes"),
        ));
    }
    *budget -= n;
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| HttpError::new(400, "the request head is not UTF-8"))
}

/// Parses one request from `r` (see the module docs for the limits).
pub fn parse_request(r: &mut impl BufRead) -> Result<Request, HttpError> {
    let mut budget = MAX_HEAD_BYTES;
    let line = read_line(r, &mut budget)?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::new(
            400,
            "the request line must be 'METHOD /path HTTP/1.1'",
        ));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(HttpError::new(400, "the method must be upper-case letters"));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(HttpError::new(505, "only HTTP/1.1 and HTTP/1.0 are served"));
    }
    if !target.starts_with('/') {
        return Err(HttpError::new(
            400,
            "the request target must be a path starting with '/'",
        ));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    loop {
        let line = read_line(r, &mut budget)?;
        if line.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADERS {
            return Err(HttpError::new(
                431,
                format!("more than {MAX_HEADERS} headers"),
            ));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::new(400, "a header line has no ':'"));
        };
        if name.is_empty() || name.bytes().any(|b| !(b.is_ascii_graphic())) {
            return Err(HttpError::new(400, "a header name is empty or not a token"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body: Vec::new(),
    };
    if req.header("transfer-encoding").is_some() {
        return Err(HttpError::new(
            411,
            "chunked request bodies are not accepted; send a Content-Length",
        ));
    }
    if let Some(len) = req.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| HttpError::new(400, "Content-Length must be a decimal number"))?;
        if len > MAX_BODY {
            return Err(HttpError::new(
                413,
                format!("the body is {len} bytes; at most {MAX_BODY} are accepted"),
            ));
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body)
            .map_err(|e| HttpError::new(400, format!("the body ended early: {e}")))?;
        req.body = body;
    }
    Ok(req)
}

/// The reason phrase of the statuses we send.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Writes a whole response with `Connection: close` and defensive headers.
pub(crate) fn respond(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'self'; connect-src 'self'; img-src 'self' data:\r\n\r\n",
        reason(status),
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
}

/// A JSON error body: `{"error": reason}`.
pub(crate) fn error_body(reason: &str) -> Vec<u8> {
    serde_json::json!({ "error": reason })
        .to_string()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[u8]) -> Result<Request, HttpError> {
        parse_request(&mut std::io::BufReader::new(s))
    }

    #[test]
    fn a_request_with_a_body_parses() {
        let r =
            parse(b"POST /api/set?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.query.as_str()),
            ("POST", "/api/set", "x=1")
        );
        assert_eq!(r.header("host"), Some("a"));
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn limits_and_malformed_heads_are_4xx_with_a_reason() {
        assert_eq!(parse(b"GET / HTTP/1.1\r\n").unwrap_err().status, 400);
        assert_eq!(parse(b"GET /\r\n\r\n").unwrap_err().status, 400);
        assert_eq!(parse(b"get / HTTP/1.1\r\n\r\n").unwrap_err().status, 400);
        assert_eq!(parse(b"GET x HTTP/1.1\r\n\r\n").unwrap_err().status, 400);
        assert_eq!(parse(b"GET / HTTP/2\r\n\r\n").unwrap_err().status, 505);
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\nbad\r\n\r\n").unwrap_err().status,
            400
        );
        let big = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(parse(big.as_bytes()).unwrap_err().status, 431);
        let many: String = (0..=MAX_HEADERS).map(|i| format!("H{i}: v\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(parse(many.as_bytes()).unwrap_err().status, 431);
        let huge = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        let e = parse(huge.as_bytes()).unwrap_err();
        assert_eq!(e.status, 413);
        assert!(e.reason.contains("at most"));
        assert_eq!(
            parse(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n{}")
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap_err()
                .status,
            411
        );
    }
}
